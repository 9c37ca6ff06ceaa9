// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// fake_system_device.h - install a FakeDevice as the process-wide device of
// the scif_* C functions (see fake_system_device.cpp).  One at a time.
#ifndef LIBSCIF_TESTS_FAKE_SYSTEM_DEVICE_H
#define LIBSCIF_TESTS_FAKE_SYSTEM_DEVICE_H

#include "fake_device.h"

namespace scif_test {

// While alive, every scif_* call of the test program talks to dev.
struct FakeSystemDevice {
    FakeSystemDevice();
    ~FakeSystemDevice();
    FakeSystemDevice(const FakeSystemDevice &) = delete;
    FakeSystemDevice &operator=(const FakeSystemDevice &) = delete;

    FakeDevice dev;
};

} // namespace scif_test

#endif // LIBSCIF_TESTS_FAKE_SYSTEM_DEVICE_H
