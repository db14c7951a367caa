#include "BuildInfo.h"

/// A fixed-size slot behind a marker that build_shipped_herald finds in the linked binary and overwrites: the
/// commit and date then need no compiler flag, which would change with every commit and rebuild every module.
/// In C, in its own translation unit, so no optimizer folds the placeholder text into its readers.
__attribute__((used)) const char herald_build_info_slot[128] = "HERALD-BUILD-INFO:commit unknown, built unknown";

const char *herald_build_info(void) {
    return herald_build_info_slot + sizeof("HERALD-BUILD-INFO:") - 1;
}
