// A property a fuzz target checks: when it fails the process aborts, which libFuzzer records as a crash
// with the input that caused it.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#define IOS_FUZZ_CHECK(cond, message)                                                           \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      std::fprintf(stderr, "fuzz check failed: %s: %s\n", #cond, std::string(message).c_str()); \
      std::abort();                                                                             \
    }                                                                                           \
  } while (0)
