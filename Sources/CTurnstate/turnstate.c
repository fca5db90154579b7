/* The CTurnstate target exposes Include/ (through the include symlink) to the
 * Swift implementation, which is checked against it by @c @implementation.
 * This file exists so that SwiftPM treats the target as C code and rebuilds
 * dependants when the header changes; it defines nothing. */
#include "turnstate.h"
