#include "schema/clock.h"

#include <chrono>

namespace baton {

double UnixTimeNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace baton
