// Checked int64 sizes for the memory plan (memory_plan.cc): counts that remember an overflow,
// so a plan whose products leave int64 says so instead of wrapping. Private to the plan; it owns
// no state beyond the value and its flag.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>

namespace baton {
namespace memory_plan_detail {

// int64 arithmetic that remembers an overflow: the plan multiplies sizes that are each in range
// but whose products need not be. Once set, `bad` stays set through every later operation.
struct Checked {
  int64_t v = 0;
  bool bad = false;
  Checked(int64_t x = 0) : v(x) {}  // NOLINT: sizes convert implicitly
  static Checked Of(int64_t x, bool b) {
    Checked c(x);
    c.bad = b;
    return c;
  }
  friend Checked operator+(Checked a, Checked b) {
    int64_t r = 0;
    const bool o = __builtin_add_overflow(a.v, b.v, &r);
    return Of(r, a.bad || b.bad || o);
  }
  friend Checked operator-(Checked a, Checked b) {
    int64_t r = 0;
    const bool o = __builtin_sub_overflow(a.v, b.v, &r);
    return Of(r, a.bad || b.bad || o);
  }
  friend Checked operator*(Checked a, Checked b) {
    int64_t r = 0;
    const bool o = __builtin_mul_overflow(a.v, b.v, &r);
    return Of(r, a.bad || b.bad || o);
  }
  Checked& operator+=(Checked b) { return *this = *this + b; }
};

inline Checked Max(std::initializer_list<Checked> xs) {
  Checked out = *xs.begin();
  for (const Checked& x : xs) {
    out = Checked::Of(std::max(out.v, x.v), out.bad || x.bad);
  }
  return out;
}

// Stores a checked count into a plain field, raising `*overflow` when it did not fit.
inline int64_t Store(Checked c, bool* overflow) {
  if (c.bad) *overflow = true;
  return c.v;
}

}  // namespace memory_plan_detail
}  // namespace baton
