// The bounded torch.save reader of the LeRobot importer (trainer/lerobot/pickle_scan.h,
// stored_zip.h, pth_segment.h) on hand-made bytes: the structure torch.save writes is read, and
// every hostile stream (an opcode on an empty stack, deep nesting, a huge memo index, a tensor
// larger than its storage, a cycle, a foreign global, a bad zip) is a named error, never a crash.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>

#include "schema/input_file.h"
#include "tests/common/temp_dir.h"
#include "trainer/lerobot/pickle_scan.h"
#include "trainer/lerobot/pth_segment.h"

namespace baton {
namespace {
using namespace std::string_literals;

// --- a pickle writer, opcode by opcode, as Python's pickler (protocol 2) writes them ----------
std::string Int(int64_t v) {
  std::string s = "J";
  for (int k = 0; k < 4; ++k) s += char((uint64_t(v) >> (8 * k)) & 0xFF);
  return s;
}
std::string Str(const std::string& v) {
  std::string s = "X";
  for (int k = 0; k < 4; ++k) s += char((v.size() >> (8 * k)) & 0xFF);
  return s + v;
}
std::string IntTuple(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (int64_t x : v) s += Int(x);
  return s + "t";
}
// _rebuild_tensor_v2(storage, offset, sizes, strides, False, OrderedDict())
std::string Tensor(const std::string& cls, const std::string& key, int64_t numel, int64_t offset,
                   const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  return "ctorch._utils\n_rebuild_tensor_v2\n((" + Str("storage") + "ctorch\n" + cls + "\n" +
         Str(key) + Str("cpu") + Int(numel) + "tQ" + Int(offset) + IntTuple(sizes) +
         IntTuple(strides) + "\x89" + "ccollections\nOrderedDict\n)Rt" + "R";
}
const std::string kHead = "\x80\x02";

// --- a stored zip, as torch.save lays it out ---------------------------------------------------
void Le(std::string* s, uint64_t v, int n) {
  for (int k = 0; k < n; ++k) *s += char((v >> (8 * k)) & 0xFF);
}
std::string Zip(const std::vector<std::pair<std::string, std::string>>& members,
                uint16_t method = 0) {
  std::string z, dir;
  for (const auto& [name, data] : members) {
    const uint64_t local = z.size();
    Le(&z, 0x04034b50, 4);
    Le(&z, 20, 2);
    Le(&z, 0, 2);
    Le(&z, method, 2);
    Le(&z, 0, 4);
    Le(&z, 0, 4);  // crc
    Le(&z, data.size(), 4);
    Le(&z, data.size(), 4);
    Le(&z, name.size(), 2);
    Le(&z, 0, 2);
    z += name + data;
    Le(&dir, 0x02014b50, 4);
    Le(&dir, 20, 2);
    Le(&dir, 20, 2);
    Le(&dir, 0, 2);
    Le(&dir, method, 2);
    Le(&dir, 0, 4);
    Le(&dir, 0, 4);
    Le(&dir, data.size(), 4);
    Le(&dir, data.size(), 4);
    Le(&dir, name.size(), 2);
    Le(&dir, 0, 2);
    Le(&dir, 0, 2);
    Le(&dir, 0, 2);
    Le(&dir, 0, 2);
    Le(&dir, 0, 4);
    Le(&dir, local, 4);
    dir += name;
  }
  const uint64_t dir_offset = z.size();
  z += dir;
  Le(&z, 0x06054b50, 4);
  Le(&z, 0, 4);
  Le(&z, members.size(), 2);
  Le(&z, members.size(), 2);
  Le(&z, dir.size(), 4);
  Le(&z, dir_offset, 4);
  Le(&z, 0, 2);
  return z;
}

std::string Bf16Bytes(int n) { return std::string(size_t(n) * 2, '\x3f'); }  // 0x3f3f: finite

// The dict upstream writes per camera: latent [F*h*w, C] = [4, 2] bf16, F = 1, h = w = 2, a text
// embedding [2, 2], frame_ids as a one-element list (one APPEND).
std::string SegmentPickle(const std::string& frame_ids = "]q\x01" + Int(5) + "a") {
  return kHead + "}q\x00("s + Str("latent") + Tensor("BFloat16Storage", "0", 8, 0, {4, 2}, {2, 1}) +
         Str("latent_num_frames") + Int(1) + Str("latent_height") + Int(2) + Str("latent_width") +
         Int(2) + Str("text_emb") + Tensor("BFloat16Storage", "1", 4, 0, {2, 2}, {2, 1}) +
         Str("frame_ids") + frame_ids + Str("text") + Str("pick") + "u.";
}
std::string SegmentZip(const std::string& pickle, int64_t latent_bytes = 16) {
  return Zip({{"seg/data.pkl", pickle},
              {"seg/data/0", Bf16Bytes(int(latent_bytes / 2))},
              {"seg/data/1", Bf16Bytes(4)},
              {"seg/version", "3\n"}});
}

std::string ScanError(const std::string& pickle) {
  std::shared_ptr<const PickleValue> root;
  const Status st = ScanPickle(
      pickle, [](const std::string&) -> int64_t { return 16; }, &root);
  return st.ok() ? "ok" : st.message();
}

TEST(PickleScan, ReadsTheStructureTorchSaveWrites) {
  TorchSave ts;
  const std::string file = SegmentZip(SegmentPickle());
  ASSERT_TRUE(ScanTorchSave(file, &ts).ok()) << ScanTorchSave(file).message();
  const PickleValue* lat = ts.root->Get("latent");
  ASSERT_NE(lat, nullptr);
  ASSERT_EQ(lat->kind, PickleValue::Kind::kTensor);
  EXPECT_EQ(lat->tensor.sizes, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(lat->tensor.dtype, "BFloat16");
  EXPECT_EQ(ts.storages.at("0").size, 16u);
  // A one-element list pickles as EMPTY_LIST, item, APPEND: read, not refused.
  const PickleValue* ids = ts.root->Get("frame_ids");
  ASSERT_NE(ids, nullptr);
  ASSERT_EQ(ids->kind, PickleValue::Kind::kList);
  ASSERT_EQ(ids->items.size(), 1u);
  EXPECT_EQ(ids->items[0]->i, 5);
  EXPECT_EQ(ts.root->Get("text")->s, "pick");
}

TEST(PickleScan, OpcodesOnAnEmptyStackAreRefused) {
  for (const std::string op : {"\x85", "\x86", "\x87", "R", "a", "s", "Q", "0", "t", "e", "u"}) {
    const std::string why = ScanError(kHead + op + ".");
    EXPECT_NE(why, "ok") << "opcode " << int(uint8_t(op[0]));
    EXPECT_NE(why.find("pickle byte 2"), std::string::npos) << why;
  }
  // BUILD and NEWOBJ are not in the structure at all, whatever the stack holds.
  EXPECT_NE(ScanError(kHead + "N)b.").find("(BUILD) is not one torch.save writes"),
            std::string::npos);
  EXPECT_NE(ScanError(kHead + "N)\x81.").find("(NEWOBJ)"), std::string::npos);
  // Values below a MARK are not the opcode's to pop.
  EXPECT_NE(ScanError(kHead + "N(\x85.").find("TUPLE1 needs 1 value(s) on the stack, 0 there"),
            std::string::npos);
  EXPECT_EQ(ScanError(kHead + ")."), "ok");
  EXPECT_NE(ScanError(kHead + "NN.").find("STOP with 2 values"), std::string::npos);
  EXPECT_NE(ScanError(kHead + "N").find("ends without STOP"), std::string::npos);
}

TEST(PickleScan, NestingIsBounded) {
  // 200k nested lists, each pushed then appended: the stack bound stops it.
  std::string deep = kHead + std::string(200000, ']') + std::string(199999, 'a') + ".";
  EXPECT_NE(ScanError(deep).find("stack deeper than 4096"), std::string::npos);
  // 200k tuples around one int, with a stack of one: the nesting bound stops it.
  std::string tuples = kHead + Int(1) + std::string(200000, '\x85') + ".";
  EXPECT_NE(ScanError(tuples).find("nested deeper than 16"), std::string::npos);
  // Lists nested through the memo, the stack never above 2.
  std::string memo = kHead + "]q\x00"s;
  for (int k = 1; k < 100; ++k) memo += "]h" + std::string(1, char(k - 1)) + "aq" + char(k);
  EXPECT_NE(ScanError(memo + ".").find("nested deeper than 16"), std::string::npos);
  // 17 levels of marks are fine; 65 open marks are not.
  EXPECT_NE(ScanError(kHead + std::string(65, '(') + ".").find("open marks"), std::string::npos);
}

TEST(PickleScan, MemoIndicesAreBounded) {
  EXPECT_NE(ScanError(kHead + "Nr\xff\xff\xff\xff.").find("memo index 4294967295"),
            std::string::npos);
  EXPECT_NE(ScanError(kHead + "h\x07.").find("GET of memo index 7, never PUT"), std::string::npos);
  EXPECT_NE(ScanError(kHead + "q\x00."s).find("PUT with nothing on the stack"), std::string::npos);
}

TEST(PickleScan, CyclesAndSharedContainersAreRefused) {
  // l = []; l.append(l)
  EXPECT_NE(ScanError(kHead + "]q\x00h\x00"
                              "a."s)
                .find("a cycle"),
            std::string::npos);
  // a list changed after it went into a tuple
  EXPECT_NE(ScanError(kHead + "]q\x00\x85h\x00Na0."s).find("already inside another container"),
            std::string::npos);
}

TEST(PickleScan, TensorsMustLieInsideTheirStorage) {
  auto one = [](const std::string& tensor) { return ScanError(kHead + tensor + "."); };
  // 16 bytes of storage = 8 bf16 elements
  EXPECT_EQ(one(Tensor("BFloat16Storage", "0", 8, 0, {4, 2}, {2, 1})), "ok");
  EXPECT_NE(one(Tensor("BFloat16Storage", "0", 8, 0, {100, 2}, {2, 1})).find("reaches element"),
            std::string::npos);
  EXPECT_NE(one(Tensor("BFloat16Storage", "0", 8, 1, {4, 2}, {2, 1})).find("reaches element 8"),
            std::string::npos);
  // the storage claims more elements than its data holds
  EXPECT_NE(one(Tensor("BFloat16Storage", "0", 1000, 0, {4, 2}, {2, 1}))
                .find("claims 1000 elements of 2 bytes, its data holds 16 bytes"),
            std::string::npos);
  EXPECT_NE(one(Tensor("FloatStorage", "0", 8, 0, {8}, {1})).find("its data holds 16"),
            std::string::npos);
  // a broadcast view: more elements than the storage, all inside it
  EXPECT_NE(one(Tensor("BFloat16Storage", "0", 8, 0, {1000000}, {0})).find("broadcast view"),
            std::string::npos);
  EXPECT_NE(one(Tensor("BFloat16Storage", "0", 8, 0, {-4, 2}, {2, 1})).find("negative"),
            std::string::npos);
  EXPECT_NE(one(Tensor("BFloat16Storage", "0", 8, 0, {1 << 30, 1 << 30, 1 << 30}, {1, 1, 1}))
                .find("overflow"),
            std::string::npos);
  EXPECT_NE(one(Tensor("EvilStorage", "0", 8, 0, {8}, {1})).find("global 'torch.EvilStorage'"),
            std::string::npos);
  // no data member for the storage
  std::shared_ptr<const PickleValue> root;
  const Status st = ScanPickle(
      kHead + Tensor("BFloat16Storage", "9", 8, 0, {8}, {1}) + ".",
      [](const std::string&) -> int64_t { return -1; }, &root);
  EXPECT_NE(st.message().find("has no data/9 member"), std::string::npos) << st.message();
}

TEST(PickleScan, OnlyTheGlobalsOfTensorsAreAccepted) {
  EXPECT_NE(ScanError(kHead + "cos\nsystem\n.").find("global 'os.system' is not one torch.save"),
            std::string::npos);
  EXPECT_NE(ScanError(kHead + "ctorch\nFloatStorage\n)R.").find("REDUCE of 'torch FloatStorage'"),
            std::string::npos);
  EXPECT_NE(ScanError("\x80\x04N.").find("protocol 4"), std::string::npos);
  EXPECT_NE(ScanError(kHead + "\x8a\x09" + std::string(9, '\1') + ".").find("LONG1 of 9 bytes"),
            std::string::npos);
  EXPECT_NE(ScanError(kHead + "X\xff\xff\xff\x7f" + "abc.").find("ends inside its argument"),
            std::string::npos);
}

TEST(StoredZip, RefusesWhatTorchSaveNeverWrites) {
  EXPECT_NE(ScanTorchSave("not a zip").message().find("not a zip archive"), std::string::npos);
  const std::string ok = SegmentZip(SegmentPickle());
  EXPECT_TRUE(ScanTorchSave(ok).ok());
  // compressed members
  EXPECT_NE(ScanTorchSave(Zip({{"a/data.pkl", kHead + "N."}}, 8)).message().find("compressed"),
            std::string::npos);
  // a member whose size runs past the archive's data
  std::string cut = ok;
  const size_t dir = cut.find("PK\x01\x02");
  for (int k : {20, 21, 22, 24, 25, 26}) cut[dir + size_t(k)] = '\xff';  // first member's sizes
  cut[dir + 23] = cut[dir + 27] = '\x00';
  EXPECT_NE(ScanTorchSave(cut).message().find("runs past"), std::string::npos)
      << ScanTorchSave(cut).message();
  // a storage smaller than the tensor over it (sizes exceed the storage)
  EXPECT_NE(ScanTorchSave(SegmentZip(SegmentPickle(), 8)).message().find("its data holds 8 bytes"),
            std::string::npos);
  EXPECT_NE(ScanTorchSave(Zip({{"a/x", ""}})).message().find("no a/data.pkl"), std::string::npos);
  EXPECT_NE(ScanTorchSave(Zip({{"a/data.pkl", kHead + "N."}, {"b/data/0", ""}}))
                .message()
                .find("outside the archive's folder"),
            std::string::npos);
}

TEST(PthSegment, ReadsASegmentAndNamesBadKeys) {
  test::TempDir dir;
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary) << bytes;
    return dir / name;
  };
  auto seg = ReadPthSegment(write("ok.pth", SegmentZip(SegmentPickle())), true);
  ASSERT_TRUE(seg.ok()) << seg.status().message();
  EXPECT_EQ(seg->latent.shape, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(seg->latent.bytes, Bf16Bytes(8));
  EXPECT_EQ(seg->frame_ids, (std::vector<int64_t>{5}));
  EXPECT_EQ(CountNonFinite(seg->latent), 0);

  // latent_height -2: refused naming the key, not carried to the output
  std::string neg = SegmentPickle();
  neg.replace(neg.find(Str("latent_height") + Int(2)), (Str("latent_height") + Int(2)).size(),
              Str("latent_height") + Int(-2));
  auto bad = ReadPthSegment(write("neg.pth", SegmentZip(neg)), true);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("neg.pth: key 'latent_height': -2"), std::string::npos)
      << bad.status().message();
  // F*h*w overflowing int64
  std::string huge = SegmentPickle();
  for (const char* k : {"latent_num_frames", "latent_height", "latent_width"}) {
    const std::string from = Str(k) + Int(k[7] == 'n' ? 1 : 2);
    huge.replace(huge.find(from), from.size(),
                 Str(k) + "\x8a\x08" + std::string(7, '\xff') + "\x0f");
  }
  bad = ReadPthSegment(write("huge.pth", SegmentZip(huge)), true);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("huge.pth: key 'latent': shape [4, 2] is not [F*h*w, C]"),
            std::string::npos)
      << bad.status().message();
  // NaN latents are counted (0x7fc0 is a bf16 NaN)
  RawTensor nan{StDType::kBF16, {2}, std::string("\xc0\x7f\x3f\x3f", 4)};
  EXPECT_EQ(CountNonFinite(nan), 1);
}

TEST(InputFile, RefusesWhatIsNotARegularFile) {
  test::TempDir dir;
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Refused unopened: opening the FIFO would block this test forever.
  auto r = ReadRegularFile(fifo, 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("fifo: it is a FIFO, not a regular file"), std::string::npos);
  r = ReadRegularFile("/dev/zero", 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("a character device"), std::string::npos);
  EXPECT_NE(ReadPthTensor(fifo).status().message().find("a FIFO"), std::string::npos);
  std::ofstream(dir / "big") << std::string(100, 'x');
  EXPECT_NE(ReadRegularFile(dir / "big", 10).status().message().find("100 bytes, more than the 10"),
            std::string::npos);
}

}  // namespace
}  // namespace baton
