// The event records (schema/event_records.h): what the writers emit reads back the same, NaN
// becomes null and back, ingest's leniency holds (no value rather than a wrong one), and every
// protocol word has one name that parses back to it.
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <limits>
#include <set>

#include "schema/event_records.h"
#include "schema/resume_decision.h"
#include "schema/run_folder.h"
#include "schema/stop_signals.h"
#include "vocabulary_checks.h"

namespace baton {
namespace {

using nlohmann::json;

// Through text, as the files carry it.
json Text(const json& j) { return json::parse(j.dump()); }

TEST(EventRecords, StepRoundTripsAndNanIsNull) {
  StepEvent e;
  e.step = 41;
  e.lr = 3e-4;
  e.loss = std::numeric_limits<double>::quiet_NaN();
  e.grad_norm = std::numeric_limits<double>::infinity();
  e.tokens = 1234;
  e.in_warmup = true;
  e.nonfinite = true;
  e.nonfinite_episodes = {"ep_3", "ep_<b>"};
  e.consecutive_nonfinite = 2;
  const json j = Text(e.ToJson());
  EXPECT_TRUE(j["loss"].is_null());
  EXPECT_TRUE(j["grad_norm"].is_null());
  const StepEvent back = StepEvent::FromJson(j);
  EXPECT_EQ(back.step, 41);
  EXPECT_EQ(back.lr, 3e-4);
  EXPECT_TRUE(std::isnan(back.loss));
  EXPECT_TRUE(std::isnan(back.grad_norm));
  EXPECT_EQ(back.tokens, 1234);
  EXPECT_TRUE(back.in_warmup);
  EXPECT_TRUE(back.nonfinite);
  EXPECT_EQ(back.nonfinite_episodes, e.nonfinite_episodes);
  EXPECT_EQ(back.consecutive_nonfinite, 2);
  // A finite step carries no non-finite keys at all.
  EXPECT_FALSE(Text(StepEvent{}.ToJson()).contains("nonfinite"));
}

TEST(EventRecords, ReadingIsLenientButNeverWrong) {
  const json j = json::parse(R"({"step": 1e300, "lr": "fast", "tokens": 18446744073709551615,
                                 "loss": null, "nonfinite": true, "nonfinite_episodes": ["a", 7, {}]})");
  const StepEvent e = StepEvent::FromJson(j);
  EXPECT_FALSE(e.step) << "a step beyond int64 is no step, not a wrapped one";
  EXPECT_TRUE(std::isnan(e.lr));
  EXPECT_EQ(e.tokens, 0);
  EXPECT_TRUE(std::isnan(e.loss));
  EXPECT_EQ(e.nonfinite_episodes, (std::vector<std::string>{"a", "7"}));
  EXPECT_FALSE(SegmentStartEvent::FromJson(json::object()).step0);
  // Events written before init_from existed read as "no init folder".
  EXPECT_EQ(SegmentStartEvent::FromJson(json{{"mode", "fresh"}}).init_from, "");
}

TEST(EventRecords, EveryRecordRoundTrips) {
  SegmentStartEvent ss;
  ss.mode = "exact";
  ss.step0 = 1500;
  ss.target_steps = 3000;
  ss.resume_warmup_steps = 0;
  ss.warmup_until = 200;
  ss.checkpoint = "/r/checkpoints/checkpoint_step_1500";
  ss.skipped = {"/r/checkpoints/checkpoint_step_1600: truncated"};
  ss.world_size = 8;
  ss.load_seconds = 1.5;
  ss.config_hash = "abc";
  ss.job_id = "77";
  ss.restart_count = 2;
  ss.init_from = "/models/lingbot-va-base/transformer";
  EXPECT_EQ(Text(SegmentStartEvent::FromJson(Text(ss.ToJson())).ToJson()), Text(ss.ToJson()));
  EXPECT_EQ(SegmentStartEvent::FromJson(Text(ss.ToJson())).init_from, ss.init_from);

  SegmentEndEvent se;
  se.step = 12;
  se.reason = Name(SegmentEndReason::kError);
  se.exit_code = 65;
  se.rank = 1;
  se.message = "data error: x.safetensors";
  const SegmentEndEvent se2 = SegmentEndEvent::FromJson(Text(se.ToJson()));
  EXPECT_EQ(se2.step, 12);
  EXPECT_EQ(se2.reason, "error");
  EXPECT_EQ(se2.exit_code, 65);
  EXPECT_EQ(se2.rank, 1);
  EXPECT_EQ(se2.message, se.message);
  EXPECT_FALSE(se2.signal);
  EXPECT_TRUE(Text(se.ToJson())["signal"].is_null());

  // The signal is written by its word and read back as the enum; a word this build does not
  // know (or a wrong type) is no signal, as the header says.
  SegmentEndEvent stop;
  stop.step = 3;
  stop.reason = Name(SegmentEndReason::kSignal);
  stop.signal = Signal::kUsr1;
  stop.exit_code = 75;
  EXPECT_EQ(Text(stop.ToJson())["signal"], "USR1");
  EXPECT_EQ(SegmentEndEvent::FromJson(Text(stop.ToJson())).signal, Signal::kUsr1);
  json foreign = Text(stop.ToJson());
  foreign["signal"] = "SIGHUP";
  EXPECT_FALSE(SegmentEndEvent::FromJson(foreign).signal);
  foreign["signal"] = 10;
  EXPECT_FALSE(SegmentEndEvent::FromJson(foreign).signal);

  CheckpointEvent c{12, "/r/checkpoints/checkpoint_step_12", 4096, 0.25, "signal"};
  EXPECT_EQ(Text(CheckpointEvent::FromJson(Text(c.ToJson())).ToJson()), Text(c.ToJson()));
  MicrostepEvent m{3, 7, 4000, 0.5, 1 << 20};
  EXPECT_EQ(Text(MicrostepEvent::FromJson(Text(m.ToJson())).ToJson()), Text(m.ToJson()));
  AttemptStartEvent as;
  as.job_id = "77";
  as.nodes = "n[1-2]";
  as.mode = "weights_only";
  as.step0 = 100;
  as.resume_warmup_steps = 50;
  EXPECT_EQ(Text(AttemptStartEvent::FromJson(Text(as.ToJson())).ToJson()), Text(as.ToJson()));
  AttemptEndEvent ae;
  ae.job_id = "77";
  ae.restart_count = 2;
  ae.exit_code = 79;
  ae.action = Name(ExitAction::kFail);
  ae.reason = Name(AttemptEndReason::kDiverged);
  EXPECT_EQ(Text(AttemptEndEvent::FromJson(Text(ae.ToJson())).ToJson()), Text(ae.ToJson()));
  EXPECT_EQ(Text(ae.ToJson())["reason"], "diverged");
}

// Writing what was read back gives what was written, with every field set and with every
// optional one unset.
template <class R>
json RoundTripped(const R& r) {
  return Text(R::FromJson(Text(r.ToJson())).ToJson());
}

TEST(EventRecords, EveryFieldSetOrUnsetRoundTrips) {
  SegmentStartEvent ss{"exact", 10,  20,    5,    15, "/c/10", "/m/t", {"/c/11: truncated"},
                       8,       1.5, "abc", "77", 2};
  StepEvent st{
      3, 1e-4, 2.5, 1.5, 1.0, 0.75, 100, 20, 4, 30, 6, 0.5, 200.0, true, 1, true, {"ep_1", "ep_2"},
      2};
  MicrostepEvent ms{3, 1, 50, 0.25, 1 << 20};
  CheckpointEvent ck{10, "/c/10", 4096, 0.5, "periodic"};
  EvalEvent ev{10, "/c/10", "inline", 2.0, 1.25, 0.75, 12, 300, 4.5, "abc", "77"};
  SegmentEndEvent se{12, "signal", Signal::kUsr1, 75, 1, "stopped"};
  AttemptStartEvent as{"77", 2, "n[1-2]", "/c/10", "exact", 10, 5, {"/c/11"}, 1, "hang"};
  AttemptEndEvent ae{"77", 2, 79, "restart", "hang", 1, 100.0, 160.0, "1:update", "stacks"};
  EXPECT_EQ(RoundTripped(ss), Text(ss.ToJson()));
  EXPECT_EQ(RoundTripped(st), Text(st.ToJson()));
  EXPECT_EQ(RoundTripped(ms), Text(ms.ToJson()));
  EXPECT_EQ(RoundTripped(ck), Text(ck.ToJson()));
  EXPECT_EQ(RoundTripped(ev), Text(ev.ToJson()));
  EXPECT_EQ(RoundTripped(se), Text(se.ToJson()));
  EXPECT_EQ(RoundTripped(as), Text(as.ToJson()));
  EXPECT_EQ(RoundTripped(ae), Text(ae.ToJson()));
  EXPECT_EQ(RoundTripped(SegmentStartEvent{}), Text(SegmentStartEvent{}.ToJson()));
  EXPECT_EQ(RoundTripped(StepEvent{}), Text(StepEvent{}.ToJson()));
  EXPECT_EQ(RoundTripped(MicrostepEvent{}), Text(MicrostepEvent{}.ToJson()));
  EXPECT_EQ(RoundTripped(CheckpointEvent{}), Text(CheckpointEvent{}.ToJson()));
  EXPECT_EQ(RoundTripped(EvalEvent{}), Text(EvalEvent{}.ToJson()));
  EXPECT_EQ(RoundTripped(SegmentEndEvent{}), Text(SegmentEndEvent{}.ToJson()));
  EXPECT_EQ(RoundTripped(AttemptStartEvent{}), Text(AttemptStartEvent{}.ToJson()));
  EXPECT_EQ(RoundTripped(AttemptEndEvent{}), Text(AttemptEndEvent{}.ToJson()));

  // The key names are the protocol: a renamed key fails here.
  EXPECT_EQ(st.ToJson().dump(),
            R"({"consecutive_nonfinite":2,"epoch":1,"grad_norm":0.75,"in_warmup":true,)"
            R"("loss":2.5,"loss_action":1.0,"loss_video":1.5,"lr":0.0001,"nonfinite":true,)"
            R"("nonfinite_episodes":["ep_1","ep_2"],"padded_frames":6,"padded_tokens":20,)"
            R"("samples":4,"step":3,"step_time_s":0.5,"tokens":100,"tokens_per_s":200.0,)"
            R"("valid_frames":30})");
  EXPECT_EQ(ev.ToJson().dump(),
            R"({"checkpoint":"/c/10","config_hash":"abc","episodes":12,"job_id":"77",)"
            R"("metrics":{"loss":2.0,"loss_action":0.75,"loss_video":1.25},"mode":"inline",)"
            R"("seconds":4.5,"step":10,"valid_frames":300})");
  EXPECT_EQ(SegmentEndEvent{}.ToJson().dump(),
            R"({"exit_code":null,"reason":"","signal":null,"step":null})");
  EXPECT_EQ(ae.ToJson().dump(),
            R"({"action":"restart","exit_code":79,"hang_detected_at":160.0,)"
            R"("hang_last_heartbeat_at":100.0,"hang_stack":"stacks","hang_stale_ranks":"1:update",)"
            R"("in_job_seq":1,"job_id":"77","reason":"hang","restart_count":2})");
}

TEST(EventRecords, EveryProtocolWordParsesBack) {
  test::ExpectEveryWordParsesBack<SegmentEndReason>("segment_end reason");
  test::ExpectEveryWordParsesBack<SaveReason>("checkpoint reason");
  test::ExpectEveryWordParsesBack<ExitAction>("attempt_end action");
  test::ExpectEveryWordParsesBack<AttemptEndReason>("attempt_end reason");
  test::ExpectEveryWordParsesBack<ResumeMode>("resume mode");
  test::ExpectEveryWordParsesBack<Signal>("signal");
  // Every enumerator has a word: the tables end at the enums' last values.
  EXPECT_EQ(std::size(Vocabulary<SegmentEndReason>::kWords),
            size_t(SegmentEndReason::kDiverged) + 1);
  EXPECT_EQ(std::size(Vocabulary<ExitAction>::kWords), size_t(ExitAction::kRestart) + 1);
  EXPECT_EQ(std::size(Vocabulary<AttemptEndReason>::kWords),
            size_t(AttemptEndReason::kNodeUnhealthy) + 1);
  EXPECT_FALSE(Find<ExitAction>("retry"));
  EXPECT_FALSE(Find<ResumeMode>("resume"));
  EXPECT_FALSE(Find<Signal>("SIGTERM"));
  EXPECT_EQ(std::string(Name(AttemptEndReason::kConfigError)), "config_error");
  EXPECT_EQ(std::string(Name(ResumeMode::kWeightsOnly)), "weights_only");
  EXPECT_EQ(std::string(Name(SaveReason::kSignal)), "signal");
}

// The stop-signal table covers every protocol word once, and each log name is "SIG" + its word.
TEST(StopSignals, EveryWordOnceAndTheLogNameIsItsWord) {
  std::set<Signal> words;
  for (const StopSignalEntry& e : kStopSignals) {
    EXPECT_TRUE(words.insert(e.word).second) << e.posix_name;
    EXPECT_EQ(std::string(e.posix_name), std::string("SIG") + Name(e.word));
    EXPECT_EQ(StopSignalWord(e.number), e.word);
    EXPECT_EQ(FindStopSignal(e.number), &e);
  }
  EXPECT_EQ(words.size(), std::size(Vocabulary<Signal>::kWords));
  EXPECT_EQ(StopSignalWord(SIGKILL), std::nullopt);
  EXPECT_EQ(FindStopSignal(SIGSEGV), nullptr);
}

TEST(RunFolder, NamesEveryFileOnce) {
  const RunFolder f{"/runs/7-a"};
  EXPECT_EQ(f.RunYaml(), "/runs/7-a/run.yaml");
  EXPECT_EQ(f.SbatchScript(), "/runs/7-a/sbatch.sh");
  EXPECT_EQ(f.LogFile("123"), "/runs/7-a/logs/123.out");
  EXPECT_EQ(f.EventsFile("123", 4), "/runs/7-a/events/123.4.jsonl");
  EXPECT_EQ(f.CheckpointDir(1500), "/runs/7-a/checkpoints/checkpoint_step_1500");
  std::string job;
  int64_t restart = -1;
  ASSERT_TRUE(ParseEventsFileName(EventsFileName("local-9", 3), &job, &restart));
  EXPECT_EQ(job, "local-9");
  EXPECT_EQ(restart, 3);
  EXPECT_FALSE(ParseEventsFileName("123.jsonl", &job, &restart));
  EXPECT_FALSE(ParseEventsFileName("123.9999999999.jsonl", &job, &restart));
}

}  // namespace
}  // namespace baton
