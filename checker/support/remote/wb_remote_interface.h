/// @file
/// @brief Declares a lab's interface functions as remote calls (checker/labs/NN-name/interface.cpp).
///
/// Each lab lists the functions of its NAME.h once:
/// @code
///   #include "saxpy.h"
///   #include "wb_remote_interface.h"
///   WB_REMOTE(cudaError_t, saxpy, (int n, float a, const float* d_x, float* d_y), (n, a, d_x, d_y))
/// @endcode
/// Compiled into the judge (WB_REMOTE_JUDGE), the line defines saxpy() as a call that sends its
/// arguments to the worker; compiled into the worker (WB_REMOTE_WORKER) it registers the
/// student's saxpy() under that name. Scalars and structs of scalars (no pointers inside) travel
/// by value and pointers as numbers (device pointers are only meaningful in the worker); a
/// function with host arrays is written out by hand with the same helpers. Overloads get
/// distinct wire names with WB_REMOTE_AS.
#pragma once

#include <functional>
#include <string>
#include <tuple>
#include <type_traits>

#include "wb_remote.h"

namespace wb::remote {

template <class T>
void put_arg(Writer& w, T value) {
  if constexpr (std::is_pointer_v<T>) {
    w.put<std::uint64_t>(to_wire(value));
  } else {
    // Scalars, and trivially copyable structs of scalars (a lab's shape parameters) by value.
    static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T> ||
                      (std::is_class_v<T> && std::is_trivially_copyable_v<T> && std::is_standard_layout_v<T>),
                  "remote arguments: scalars, structs of scalars and pointers only");
    w.put(value);
  }
}

template <class T>
T get_arg(Reader& r) {
  if constexpr (std::is_pointer_v<T>) {
    return from_wire<T>(r.get<std::uint64_t>());
  } else {
    return r.get<T>();
  }
}

// ---- judge side ----------------------------------------------------------------------------

/// Runs the interface function @p name in the worker with @p args; returns its reply. Throws
/// wb::remote::WorkerError (with a learner-readable description) when the worker died.
Reader call(const std::string& name, const Writer& args);

template <class R>
struct Invoker {
  const char* name;
  template <class... A>
  R operator()(A... args) const {
    Writer w;
    (put_arg(w, args), ...);
    Reader r = call(name, w);
    if constexpr (!std::is_void_v<R>) return r.get<R>();
  }
};

// ---- worker side ---------------------------------------------------------------------------

using Handler = std::function<void(Reader&, Writer&)>;
void register_function(const std::string& name, Handler handler);

template <class R, class... A>
Handler handler(R (*f)(A...)) {
  return [f](Reader& in, Writer& out) {
    std::tuple<std::decay_t<A>...> args{get_arg<std::decay_t<A>>(in)...};  // braced: left to right
    if constexpr (std::is_void_v<R>) {
      std::apply(f, args);
    } else {
      out.put(std::apply(f, args));
    }
  };
}

struct Registration {
  Registration(const char* name, Handler h) { register_function(name, std::move(h)); }
};

}  // namespace wb::remote

#define WB_REMOTE_CAT2(a, b) a##b
#define WB_REMOTE_CAT(a, b) WB_REMOTE_CAT2(a, b)

#if defined(WB_REMOTE_JUDGE)
#define WB_REMOTE_AS(R, name, wire, params, args) \
  R name params { return ::wb::remote::Invoker<R>{wire} args; }
#elif defined(WB_REMOTE_WORKER)
#define WB_REMOTE_AS(R, name, wire, params, args)                                           \
  static const ::wb::remote::Registration WB_REMOTE_CAT(wb_remote_registration_, __LINE__){ \
      wire, ::wb::remote::handler(static_cast<R(*) params>(&name))};
#else
#define WB_REMOTE_AS(R, name, wire, params, args) \
  static_assert(false, "compile a lab's interface.cpp with WB_REMOTE_JUDGE or WB_REMOTE_WORKER");
#endif

/// One interface function, sent under its own name.
#define WB_REMOTE(R, name, params, args) WB_REMOTE_AS(R, name, #name, params, args)
