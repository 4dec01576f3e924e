// Defines the version, the configuration macros and the error type of daydream.
// SPDX-License-Identifier: MIT
#ifndef DAYDREAM_CONFIG_HPP
#define DAYDREAM_CONFIG_HPP

#include <stdexcept>
#include <string>

#define DAYDREAM_VERSION_MAJOR 0
#define DAYDREAM_VERSION_MINOR 1
#define DAYDREAM_VERSION_PATCH 0

/// Checks a precondition the library cannot afford to check in release builds (the kind
/// behind a typed handle, for one). On unless NDEBUG is defined: a broken one throws
/// daydream::error with `msg`; with NDEBUG it does nothing (and `cond` is not evaluated).
/// Users may define it first, e.g. to keep it on in release builds:
///
///     #define DAYDREAM_ASSERT(cond, msg) do { if (!(cond)) std::abort(); } while (false)
#ifndef DAYDREAM_ASSERT
#  ifdef NDEBUG
#    define DAYDREAM_ASSERT(cond, msg) static_cast<void>(0)
#  else
#    define DAYDREAM_ASSERT(cond, msg)                                                 \
      do {                                                                           \
        if (!(cond)) throw ::daydream::error(std::string("daydream: ") + (msg));     \
      } while (false)
#  endif
#endif

/// The linkage of the few functions that a program of this tree compiles once
/// (compiled/, the CMake target daydream::compiled, which defines DAYDREAM_COMPILED):
/// there their single definition is an ordinary function; in a header-only build it is
/// `inline`. Only passes/all.hpp (bundled) and io/kineto.hpp (the ingest) use it.
#ifdef DAYDREAM_COMPILED
#  define DAYDREAM_COMPILED_INLINE
#else
#  define DAYDREAM_COMPILED_INLINE inline
#endif

namespace daydream {

/// The one exception type the library throws: bad input, a refused pass, a cycle.
/// The message names what is wrong and where (file, event, task).
///
///     try { daydream::apply(g, pass); }
///     catch (const daydream::error& e) { std::cerr << e.what() << '\n'; }
class error : public std::runtime_error {
public:
  /// An error with the message `what`.
  using std::runtime_error::runtime_error;
};

/// An error in what a user asked for (an unknown pass name, a parameter out of range,
/// an option that does not parse), as opposed to bad input data or a refused pass.
/// Programs map it to exit status 2 (usage error); other daydream::error to 1.
///
///     catch (const daydream::usage_error& e) { std::cerr << e.what() << '\n'; return 2; }
class usage_error : public error {
public:
  /// A usage error with the message `what`.
  using error::error;
};

} // namespace daydream

#endif
