// The memory plan report (schema/memory_plan_report.h) and the closed vocabularies
// (schema/vocabularies.h): a report reads back equal through text, keeps the keys and order that
// `plan-memory --json`'s readers use, and every key that is missing or of the wrong type is an
// error naming it; every vocabulary word parses back to itself and a stranger is refused naming
// the accepted words.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "schema/memory_plan_report.h"
#include "schema/vocabularies.h"
#include "vocabulary_checks.h"

namespace baton {
namespace {

using nlohmann::json;

// Every field set, each to a value no other field has (a field read into its neighbour differs).
MemoryPlanReport Full() {
  MemoryPlanReport r;
  r.config = "/cfg/run.yaml";
  r.world_size = 8;
  r.dtype = DType::kBFloat16;
  r.device = Device::kCuda;
  r.shard = ShardMode::kGradients;
  r.master = OptimMaster::kSharded;
  r.activation_checkpointing = ActivationCheckpointing::kBlocksAttention;
  r.parameters = {5088872670, 5066846430};
  r.row = {"/data/ds", 2, 40, 1001, 1002, 1003, 1004, 1005, 3, 64};
  r.bytes = {2001, 2002, 2003, 2004, 2005, 2006, 2007, 2008, 2009, 2010, 2011, 2012};
  r.checkpoint_snapshot_in_total = false;
  r.activations = {3001, 3002, 3003, 3004, 3005, 3006, 3007, 3008, 3009, 3010};
  r.heap_factor = 1.25;
  r.checkpoint = {4001, 4002, ExportDType::kBf16, {501, 502, 503}, 4003, 4004};
  r.total_by_checkpointing = {6001, 6002, 6003};
  r.limit = MemoryPlanReport::Limit{"slurm.gpu_memory_gb", 80.5, int64_t(80.5 * (1 << 30))};
  r.fits = false;
  return r;
}

// Through text, as the trainer prints it and baton parses it.
json Text(const MemoryPlanReport& r) { return json::parse(r.ToJson().dump()); }

std::string ErrorOf(const json& j) {
  Result<MemoryPlanReport> r = MemoryPlanReport::FromJson(j);
  EXPECT_FALSE(r.ok()) << j.dump();
  return r.ok() ? "" : r.status().message();
}

TEST(MemoryPlanReport, RoundTripsEqual) {
  const MemoryPlanReport a = Full();
  Result<MemoryPlanReport> b = MemoryPlanReport::FromJson(Text(a));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b.value(), a);
  EXPECT_EQ(b.value().ToJson().dump(), a.ToJson().dump());

  // The defaults: no limit (null, as is fits), and no per-rank list (left out).
  const MemoryPlanReport d;
  const json j = Text(d);
  EXPECT_TRUE(j.at("limit").is_null());
  EXPECT_TRUE(j.at("fits").is_null());
  EXPECT_FALSE(j.at("checkpoint").contains("rank_bytes"));
  Result<MemoryPlanReport> back = MemoryPlanReport::FromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back.value(), d);
  EXPECT_NE(back.value(), a);
}

// Equality is field by field: changing any one leaf of the report makes it differ.
TEST(MemoryPlanReport, EveryFieldCounts) {
  const MemoryPlanReport a = Full();
  const std::vector<std::function<void(MemoryPlanReport&)>> changes = {
      [](auto& r) { r.config += "x"; },
      [](auto& r) { r.world_size++; },
      [](auto& r) { r.dtype = DType::kFloat64; },
      [](auto& r) { r.device = Device::kCpu; },
      [](auto& r) { r.shard = ShardMode::kOptimizer; },
      [](auto& r) { r.master = OptimMaster::kReplicated; },
      [](auto& r) { r.bytes.master_share++; },
      [](auto& r) { r.activation_checkpointing = ActivationCheckpointing::kBlocks; },
      [](auto& r) { r.parameters.trainable++; },
      [](auto& r) { r.row.source += "x"; },
      [](auto& r) { r.row.window++; },
      [](auto& r) { r.bytes.total++; },
      [](auto& r) { r.bytes.heap_overhead++; },
      [](auto& r) { r.checkpoint_snapshot_in_total = true; },
      [](auto& r) { r.activations.working_attention++; },
      [](auto& r) { r.heap_factor = 1.5; },
      [](auto& r) { r.checkpoint.export_dtype = ExportDType::kFp32; },
      [](auto& r) { r.checkpoint.rank_bytes.pop_back(); },
      [](auto& r) { r.checkpoint.disk_bytes++; },
      [](auto& r) { r.checkpoint.disk_files++; },
      [](auto& r) { r.total_by_checkpointing.blocks_attention++; },
      [](auto& r) { r.limit->gb = 80; },
      [](auto& r) { r.limit.reset(); },
      [](auto& r) { r.fits = true; },
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    MemoryPlanReport b = a;
    changes[i](b);
    EXPECT_NE(b, a) << "change " << i;
  }
}

// The keys and their order are the contract the tests, the docs and `baton submit` read.
TEST(MemoryPlanReport, KeysInOrder) {
  const nlohmann::ordered_json j = Full().ToJson();
  std::vector<std::string> top, bytes, activations, by_setting;
  for (const auto& [k, v] : j.items()) top.push_back(k);
  for (const auto& [k, v] : j.at("bytes").items()) bytes.push_back(k);
  for (const auto& [k, v] : j.at("activations").items()) activations.push_back(k);
  for (const auto& [k, v] : j.at("total_by_checkpointing").items()) by_setting.push_back(k);
  EXPECT_EQ(top,
            (std::vector<std::string>{"config", "world_size", "dtype", "device", "shard", "master",
                                      "activation_checkpointing", "parameters", "row", "bytes",
                                      "checkpoint_snapshot_in_total", "activations", "heap_factor",
                                      "checkpoint", "total_by_checkpointing", "limit", "fits"}));
  EXPECT_EQ(bytes, (std::vector<std::string>{"weights", "master_share", "gradients",
                                             "gradients_held", "optimizer", "collective_buffers",
                                             "autocast_copies", "activations", "heap_overhead",
                                             "runtime", "checkpoint_snapshot", "total"}));
  EXPECT_EQ(activations,
            (std::vector<std::string>{"none", "blocks", "blocks+attention", "per_block",
                                      "outside_blocks", "inputs", "working", "per_block_attention",
                                      "attention_call", "working_attention"}));
  EXPECT_EQ(by_setting, (std::vector<std::string>{"none", "blocks", "blocks+attention"}));
  EXPECT_EQ(j.at("dtype"), "bfloat16");
  EXPECT_EQ(j.at("shard"), "gradients");
  EXPECT_EQ(j.at("activation_checkpointing"), "blocks+attention");
  EXPECT_EQ(j.at("checkpoint").at("export_dtype"), "bf16");
  EXPECT_EQ(j.at("limit").at("key"), "slurm.gpu_memory_gb");
}

// Every key of a full report, as a path ("bytes.total"), with a pointer to it.
void Leaves(const json& j, const std::string& path, std::vector<std::string>* out) {
  for (const auto& [k, v] : j.items()) {
    const std::string p = path.empty() ? k : path + "." + k;
    if (v.is_object()) Leaves(v, p, out);
    out->push_back(p);
  }
}

json::json_pointer Pointer(const std::string& path) {
  std::string p;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    p += "/" + path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return json::json_pointer(p);
}

TEST(MemoryPlanReport, AMissingKeyIsAnErrorNamingIt) {
  const json full = Text(Full());
  std::vector<std::string> paths;
  Leaves(full, "", &paths);
  ASSERT_GT(paths.size(), 50u);
  for (const std::string& path : paths) {
    json j = full;
    const json::json_pointer ptr = Pointer(path);
    j[ptr.parent_pointer()].erase(ptr.back());
    if (path == "checkpoint.rank_bytes") {  // the one optional key
      Result<MemoryPlanReport> r = MemoryPlanReport::FromJson(j);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_TRUE(r.value().checkpoint.rank_bytes.empty());
      continue;
    }
    EXPECT_EQ(ErrorOf(j), path + ": missing");
  }
}

TEST(MemoryPlanReport, AMistypedKeyIsAnErrorNamingIt) {
  const json full = Text(Full());
  struct Case {
    const char* path;
    json value;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"/bytes/total", "2011", "bytes.total: expected an integer, got string"},
      {"/bytes/total", 2011.5, "bytes.total: expected an integer, got number"},
      {"/bytes/total", 9223372036854775808ull, "bytes.total: 9223372036854775808 is outside int64"},
      {"/world_size", nullptr, "world_size: expected an integer, got null"},
      {"/row/source", 7, "row.source: expected a string, got number"},
      {"/heap_factor", "1.5", "heap_factor: expected a number, got string"},
      {"/checkpoint_snapshot_in_total", 0, "checkpoint_snapshot_in_total: expected true or false"},
      {"/shard", "half", "shard: expected one of none, optimizer, gradients, got 'half'"},
      {"/device", "tpu", "device: expected one of cpu, cuda, got 'tpu'"},
      {"/activation_checkpointing", "all",
       "activation_checkpointing: expected one of none, blocks, blocks+attention, got 'all'"},
      {"/checkpoint/export_dtype", "fp16", "checkpoint.export_dtype: expected one of fp32, bf16"},
      {"/checkpoint/rank_bytes", json::array({1, "2"}),
       "checkpoint.rank_bytes[1]: expected an integer"},
      {"/limit", 80, "limit: expected an object, got number"},
      {"/limit/gb", "80", "limit.gb: expected a number"},
      {"/fits", "yes", "fits: expected true or false"},
      {"/row", json::array(), "row: expected an object, got array"},
  };
  for (const Case& c : cases) {
    json j = full;
    j[json::json_pointer(c.path)] = c.value;
    EXPECT_NE(ErrorOf(j).find(c.says), std::string::npos) << c.path << ": " << ErrorOf(j);
  }
  EXPECT_NE(ErrorOf(json::array()).find("expected an object"), std::string::npos);
  EXPECT_NE(ErrorOf(json()).find("expected an object"), std::string::npos);
}

TEST(Vocabularies, EveryWordParsesBackAndAStrangerNamesTheWords) {
  test::ExpectEveryWordParsesBack<ShardMode>("optim.shard");
  test::ExpectEveryWordParsesBack<ActivationCheckpointing>("train.activation_checkpointing");
  test::ExpectEveryWordParsesBack<Device>("train.device");
  test::ExpectEveryWordParsesBack<DType>("train.dtype");
  test::ExpectEveryWordParsesBack<ExportDType>("checkpoint.export_dtype");
  test::ExpectEveryWordParsesBack<Signal>("slurm.signal");
  test::ExpectEveryWordParsesBack<OptimMaster>("optim.master");
  test::ExpectEveryWordParsesBack<SamplerPlan>("data.plan");
  EXPECT_EQ(Words<Device>(), (std::vector<std::string>{"cpu", "cuda"}));
  EXPECT_STREQ(Name(ShardMode::kGradients), "gradients");
  EXPECT_STREQ(Name(ActivationCheckpointing::kBlocksAttention), "blocks+attention");
  EXPECT_STREQ(Name(Signal::kUsr1), "USR1");
  Result<ShardMode> bad = Parse<ShardMode>("Gradients");  // names are case-sensitive
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "expected one of none, optimizer, gradients, got 'Gradients'");
  EXPECT_FALSE(Parse<Signal>("SIGUSR1").ok());
  EXPECT_FALSE(Parse<Device>("").ok());
  EXPECT_STREQ(Name(static_cast<Device>(7)), "?");
}

}  // namespace
}  // namespace baton
