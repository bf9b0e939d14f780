// The one check every closed vocabulary (schema/vocabularies.h) passes, for the tests of the
// config's words (memory_plan_report_test.cc) and the protocol's (event_records_test.cc): each
// word parses back to its value and is its value's name, and no two words share a name or a
// value. Test-only.
#pragma once

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "schema/vocabularies.h"

namespace baton::test {

template <class E>
void ExpectEveryWordParsesBack(const char* what) {
  std::set<std::string> names;
  std::set<int> values;
  for (const Word<E>& w : Vocabulary<E>::kWords) {
    Result<E> parsed = Parse<E>(w.name);
    ASSERT_TRUE(parsed.ok()) << what << " " << w.name;
    EXPECT_EQ(parsed.value(), w.value) << what << " " << w.name;
    EXPECT_EQ(Find<E>(w.name), w.value) << what << " " << w.name;
    EXPECT_STREQ(Name(w.value), w.name) << what;
    EXPECT_TRUE(names.insert(w.name).second) << what << ": " << w.name << " twice";
    EXPECT_TRUE(values.insert(int(w.value)).second) << what << ": a value named twice";
  }
  EXPECT_FALSE(Find<E>("")) << what;
}

}  // namespace baton::test
