/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dapl_env.h - make a dapl selftest find the provider of this build.
 *
 * run-suite starts the selftests in the top build directory without any
 * environment.  When DAT_OVERRIDE is unset and lib/dapl/dat.conf.build
 * exists there, point DAT_OVERRIDE at it, put lib/.libs (the uninstalled
 * libscif the provider needs) on LD_LIBRARY_PATH and re-execute, so that
 * the dynamic loader sees the new path.
 */
#ifndef DAPL_ENV_H
#define DAPL_ENV_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void dapl_test_env(char **argv) {
    char cwd[PATH_MAX], conf[PATH_MAX + 64], libs[2 * PATH_MAX];
    const char *old;

    if (getenv("DAT_OVERRIDE") || !getcwd(cwd, sizeof(cwd)))
        return;
    snprintf(conf, sizeof(conf), "%s/lib/dapl/dat.conf.build", cwd);
    if (access(conf, R_OK))
        return;
    old = getenv("LD_LIBRARY_PATH");
    snprintf(libs, sizeof(libs), "%s/lib/.libs%s%s", cwd, old ? ":" : "", old ? old : "");
    setenv("DAT_OVERRIDE", conf, 1);
    setenv("LD_LIBRARY_PATH", libs, 1);
    execv("/proc/self/exe", argv);
}

#endif /* DAPL_ENV_H */
