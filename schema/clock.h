// The wall clock both binaries stamp records with: Unix seconds as a double, the unit of every
// "time" field in the event records, heartbeats and the store.
#pragma once

namespace baton {

double UnixTimeNow();

}  // namespace baton
