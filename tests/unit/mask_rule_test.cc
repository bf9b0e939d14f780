// MaskAllows against the table of docs/model.md ("The attention mask"). The table is written out
// here as data, one entry per row, and every combination of sample, kind, frame id and window in a
// small grid is checked against it, so changing any clause of the rule (or of the table) fails.
#include <gtest/gtest.h>

#include <string>

#include "trainer/model/packed_layout.h"

namespace baton {
namespace {

enum class Relation { kAtOrBefore, kBefore, kSame, kNever };

// The rows of the table: query kind, key kind, when the key is allowed.
struct TableRow {
  bool query_clean;
  bool key_clean;
  Relation when;
};
constexpr TableRow kTable[] = {
    {/*query_clean=*/true, /*key_clean=*/true,
     Relation::kAtOrBefore},                                         // frame_id(k) <= frame_id(q)
    {/*query_clean=*/false, /*key_clean=*/true, Relation::kBefore},  // frame_id(k) <  frame_id(q)
    {/*query_clean=*/false, /*key_clean=*/false, Relation::kSame},   // frame_id(k) == frame_id(q)
    {/*query_clean=*/true, /*key_clean=*/false, Relation::kNever},   // never
};

// Clauses 1 and 2 (same sample, not padding; within the window), then the table's row.
bool Expected(const MaskToken& q, const MaskToken& k, int32_t window) {
  if (q.seq_id < 0 || k.seq_id != q.seq_id) return false;
  const int32_t distance =
      q.frame_id > k.frame_id ? q.frame_id - k.frame_id : k.frame_id - q.frame_id;
  if (distance > window) return false;
  for (const TableRow& row : kTable) {
    if (row.query_clean != q.clean || row.key_clean != k.clean) continue;
    switch (row.when) {
      case Relation::kAtOrBefore:
        return k.frame_id <= q.frame_id;
      case Relation::kBefore:
        return k.frame_id < q.frame_id;
      case Relation::kSame:
        return k.frame_id == q.frame_id;
      case Relation::kNever:
        return false;
    }
  }
  ADD_FAILURE() << "the table has no row for this pair of kinds";
  return false;
}

std::string Describe(const MaskToken& t) {
  return std::string(t.clean ? "clean" : "noisy") + " seq " + std::to_string(t.seq_id) +
         " frame_id " + std::to_string(t.frame_id);
}

TEST(MaskRuleTest, EveryPairOfASmallGridFollowsTheTable) {
  int64_t allowed = 0, checked = 0;
  for (int32_t window = 0; window <= 5; ++window) {
    for (int32_t qs = -1; qs <= 1; ++qs) {
      for (int32_t ks = -1; ks <= 1; ++ks) {
        for (int qc = 0; qc < 2; ++qc) {
          for (int kc = 0; kc < 2; ++kc) {
            for (int32_t qf = 0; qf < 8; ++qf) {
              for (int32_t kf = 0; kf < 8; ++kf) {
                const MaskToken q{qs, qc == 1, qf}, k{ks, kc == 1, kf};
                const bool want = Expected(q, k, window);
                ASSERT_EQ(MaskAllows(q, k, window), want)
                    << Describe(q) << " -> " << Describe(k) << ", window " << window;
                allowed += want;
                ++checked;
              }
            }
          }
        }
      }
    }
  }
  // The grid reaches every row of the table on both sides of each comparison.
  EXPECT_GT(allowed, 0);
  EXPECT_LT(allowed, checked);
}

// The consequences docs/model.md draws from the table, for one sample with chunk 1, where video
// frame f has frame id 2f and its actions 2f + 1.
TEST(MaskRuleTest, ConsequencesStatedInTheDocs) {
  const int32_t wide = 64;
  auto video = [](bool clean, int32_t f) { return MaskToken{0, clean, 2 * f}; };
  auto action = [](bool clean, int32_t f) { return MaskToken{0, clean, 2 * f + 1}; };
  // Noisy actions of chunk c see the clean video of chunk c; noisy video does not see its actions.
  EXPECT_TRUE(MaskAllows(action(false, 2), video(true, 2), wide));
  EXPECT_FALSE(MaskAllows(video(false, 2), action(true, 2), wide));
  // Noisy video and noisy actions of one chunk are different blocks.
  EXPECT_FALSE(MaskAllows(video(false, 2), action(false, 2), wide));
  EXPECT_FALSE(MaskAllows(action(false, 2), video(false, 2), wide));
  // A token of a padded frame sees nothing and is seen by nothing, not even its own copy.
  const MaskToken pad{-1, true, 4};
  EXPECT_FALSE(MaskAllows(pad, pad, wide));
  EXPECT_FALSE(MaskAllows(video(true, 2), pad, wide));
  // Samples never interact.
  EXPECT_FALSE(MaskAllows(MaskToken{1, true, 4}, MaskToken{0, true, 2}, wide));
  // The window is inclusive and measured from the query.
  EXPECT_TRUE(MaskAllows(video(true, 3), video(true, 1), /*window=*/4));
  EXPECT_FALSE(MaskAllows(video(true, 3), video(true, 1), /*window=*/3));
}

}  // namespace
}  // namespace baton
