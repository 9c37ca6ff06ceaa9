// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
//
// fake_system_device.cpp - scif::system_device() for a test program that
// compiles the exported C functions (scif_api.cpp) itself: every scif_*
// call then reaches the FakeDevice a test installs with FakeSystemDevice,
// so code written against scif.h or scif.hpp runs without the module.
#include "fake_system_device.h"

#include <stdexcept>

namespace scif_test {
namespace {
FakeDevice *current = nullptr;
} // namespace

FakeSystemDevice::FakeSystemDevice() {
    current = &dev;
}

FakeSystemDevice::~FakeSystemDevice() {
    current = nullptr;
}

} // namespace scif_test

namespace scif {

Device &system_device() {
    if (!scif_test::current)
        throw std::logic_error("scif call without a scif_test::FakeSystemDevice");
    return *scif_test::current;
}

} // namespace scif
