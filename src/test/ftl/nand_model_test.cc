// The simulated NAND chip enforces the rules of real NAND and models its
// faults, timing and persistence.
#include "ftl/nand_model.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "common_helpers.h"

using namespace hybridstore::ftl;
using hybridstore::test::TempDir;

namespace {

NandGeometry small_geo() {
  NandGeometry g;
  g.page_size = 512;
  g.pages_per_block = 8;
  g.oob_size = 32;
  g.block_count = 16;
  return g;
}

std::string pattern(char c, size_t n) { return std::string(n, c); }

class NandModelTest : public testing::Test {
 protected:
  void SetUp() override {
    media_ = NandMedia::create_memory(small_geo());
    ASSERT_TRUE(media_);
    nand_ = std::make_unique<NandModel>(media_, NandModelOptions{});
  }
  std::shared_ptr<NandMedia> media_;
  std::unique_ptr<NandModel> nand_;
};

}  // namespace

TEST_F(NandModelTest, FreshFlashReadsErased) {
  std::string d(512, 0), o(32, 0);
  ASSERT_EQ(nand_->read_page(3, 5, &d[0], &o[0]), 0);
  EXPECT_EQ(d, pattern('\xff', 512));
  EXPECT_EQ(o, pattern('\xff', 32));
}

TEST_F(NandModelTest, ProgrammingAPageTwiceIsAnError) {
  std::string d = pattern('a', 512);
  ASSERT_EQ(nand_->program_page(1, 0, d.data(), nullptr), 0);
  EXPECT_EQ(nand_->program_page(1, 0, d.data(), nullptr), -EINVAL);
}

TEST_F(NandModelTest, ProgrammingBelowTheHighestProgrammedPageIsAnError) {
  std::string d = pattern('a', 512);
  ASSERT_EQ(nand_->program_page(1, 5, d.data(), nullptr), 0);
  EXPECT_EQ(nand_->program_page(1, 2, d.data(), nullptr), -EINVAL);
  EXPECT_EQ(nand_->program_page(1, 6, d.data(), nullptr), 0);  // forward skips are allowed
}

TEST_F(NandModelTest, EraseMakesPagesProgrammableAgain) {
  // OOB bytes 0..1 stay 0xFF: anything else there is the bad-block marker.
  std::string d = pattern('a', 512), o = "\xff\xff" + pattern('\x11', 30), back(512, 0),
              oback(32, 0);
  ASSERT_EQ(nand_->program_page(2, 0, d.data(), o.data()), 0);
  ASSERT_EQ(nand_->read_page(2, 0, &back[0], &oback[0]), 0);
  EXPECT_EQ(back, d);
  EXPECT_EQ(oback, o);
  ASSERT_EQ(nand_->erase_block(2), 0);
  ASSERT_EQ(nand_->read_page(2, 0, &back[0], nullptr), 0);
  EXPECT_EQ(back, pattern('\xff', 512));
  EXPECT_EQ(nand_->program_page(2, 0, d.data(), nullptr), 0);
  EXPECT_EQ(nand_->wear(2), 1u);
}

TEST_F(NandModelTest, EraseOfLessThanAWholeBlockIsAnError) {
  uint64_t bb = small_geo().block_bytes();
  EXPECT_EQ(nand_->erase(0, bb / 2), -EINVAL);
  EXPECT_EQ(nand_->erase(512, bb), -EINVAL);
  EXPECT_EQ(nand_->erase(bb, bb + 512), -EINVAL);
  EXPECT_EQ(nand_->erase(bb * 15, bb * 2), -EINVAL);  // past the end
  EXPECT_EQ(nand_->erase(bb, 2 * bb), 0);
  EXPECT_EQ(nand_->wear(1), 1u);
  EXPECT_EQ(nand_->wear(2), 1u);
}

TEST_F(NandModelTest, AddressesOutsideTheChipAreErrors) {
  std::string d(512, 0);
  EXPECT_EQ(nand_->read_page(16, 0, &d[0], nullptr), -EINVAL);
  EXPECT_EQ(nand_->program_page(0, 8, d.data(), nullptr), -EINVAL);
  EXPECT_EQ(nand_->erase_block(16), -EINVAL);
}

TEST_F(NandModelTest, FactoryBadBlocksCarryTheMarkerAndRefuseWork) {
  nand_->set_factory_bad(4);
  EXPECT_TRUE(nand_->is_bad(4));
  EXPECT_FALSE(nand_->is_bad(5));
  std::string d = pattern('a', 512);
  EXPECT_EQ(nand_->program_page(4, 1, d.data(), nullptr), -EIO);
  EXPECT_EQ(nand_->erase_block(4), -EIO);
  EXPECT_TRUE(nand_->is_bad(4));
}

TEST_F(NandModelTest, AnInjectedProgramFailureKeepsFailingUntilErased) {
  nand_->inject_program_failure(3);
  std::string d = pattern('a', 512);
  EXPECT_EQ(nand_->program_page(3, 0, d.data(), nullptr), -EIO);
  EXPECT_EQ(nand_->program_page(3, 1, d.data(), nullptr), -EIO);
  EXPECT_EQ(nand_->program_page(2, 0, d.data(), nullptr), 0);
  ASSERT_EQ(nand_->erase_block(3), 0);
  EXPECT_EQ(nand_->program_page(3, 0, d.data(), nullptr), 0);
}

TEST_F(NandModelTest, BlocksWearOutAfterTheirEndurance) {
  NandModelOptions o;
  o.endurance = 3;
  NandModel n(media_, o);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(n.erase_block(7), 0);
  EXPECT_EQ(n.erase_block(7), -EIO);
  EXPECT_EQ(n.erase_block(6), 0);
}

TEST_F(NandModelTest, OperationsChargeTheVirtualClock) {
  NandModelOptions o;
  o.timing = NandTiming::paper();
  VirtualClock clock;
  NandModel n(media_, o, &clock);
  std::string d = pattern('a', 512), back(512, 0), oob(32, 0);
  ASSERT_EQ(n.program_page(0, 0, d.data(), nullptr), 0);
  EXPECT_EQ(clock.now_ns(), 850'000);  // t_x + t_w
  ASSERT_EQ(n.read_page(0, 0, &back[0], nullptr), 0);
  EXPECT_EQ(clock.now_ns(), 950'000);  // + t_r + t_x
  ASSERT_EQ(n.erase_block(0), 0);
  EXPECT_EQ(clock.now_ns(), 2'450'000);  // + t_e
  ASSERT_EQ(n.read_page(0, 1, nullptr, &oob[0]), 0);
  EXPECT_EQ(clock.now_ns(), 2'450'000 + 50'000 + 50'000 * 32 / 512);
}

TEST_F(NandModelTest, PowerCutTearsTheProgramAndKillsTheChip) {
  std::string d = pattern('\x00', 512), o = "\xff\xff" + pattern('\x00', 30);
  nand_->arm_power_cut(2);
  ASSERT_EQ(nand_->program_page(0, 0, d.data(), o.data()), 0);
  EXPECT_EQ(nand_->program_page(0, 1, d.data(), o.data()), -EIO);
  EXPECT_TRUE(nand_->power_lost());
  std::string back(512, 0);
  EXPECT_EQ(nand_->read_page(0, 0, &back[0], nullptr), -EIO);
  // A new model on the same media is the chip after power comes back.
  NandModel again(media_, NandModelOptions{});
  ASSERT_EQ(again.read_page(0, 0, &back[0], nullptr), 0);
  EXPECT_EQ(back, d);
  std::string oob(32, 0);
  ASSERT_EQ(again.read_page(0, 1, &back[0], &oob[0]), 0);
  EXPECT_NE(back + oob, d + o) << "a torn page must not read as fully programmed";
}

TEST_F(NandModelTest, PowerCutDuringEraseLeavesAHalfErasedBlock) {
  std::string d = pattern('\x00', 512);
  for (uint32_t p = 0; p < 8; ++p) ASSERT_EQ(nand_->program_page(5, p, d.data(), nullptr), 0);
  nand_->arm_power_cut(1);
  EXPECT_EQ(nand_->erase_block(5), -EIO);
  NandModel again(media_, NandModelOptions{});
  std::string back(512, 0);
  bool any_old_bits = false;
  for (uint32_t p = 0; p < 8; ++p) {
    ASSERT_EQ(again.read_page(5, p, &back[0], nullptr), 0);
    if (back != pattern('\xff', 512)) any_old_bits = true;
  }
  EXPECT_TRUE(any_old_bits);
  // Nothing can be programmed over the residue until a real erase.
  EXPECT_EQ(again.program_page(5, 0, d.data(), nullptr), -EINVAL);
  ASSERT_EQ(again.erase_block(5), 0);
  EXPECT_EQ(again.program_page(5, 0, d.data(), nullptr), 0);
}

TEST_F(NandModelTest, CorrectedBitFlipsAreReportedWithGoodData) {
  NandModelOptions o;
  o.bitflip_rate = 1.0;
  NandModel n(media_, o);
  std::string d = pattern('q', 512), back(512, 0);
  ASSERT_EQ(n.program_page(0, 0, d.data(), nullptr), 0);
  EXPECT_EQ(n.read_page(0, 0, &back[0], nullptr), -EUCLEAN);
  EXPECT_EQ(back, d);
}

TEST_F(NandModelTest, UncorrectableReadsReturnDamagedData) {
  NandModelOptions o;
  o.uncorrectable_rate = 1.0;
  NandModel n(media_, o);
  std::string d = pattern('q', 512), back(512, 0);
  ASSERT_EQ(n.program_page(0, 0, d.data(), nullptr), 0);
  EXPECT_EQ(n.read_page(0, 0, &back[0], nullptr), -EBADMSG);
  EXPECT_NE(back, d);
}

TEST(NandMediaTest, FlashFileKeepsDataOobWearAndRulesAcrossReopen) {
  TempDir dir;
  std::string path = dir.file("flash");
  std::string err;
  {
    std::shared_ptr<NandMedia> m;
    ASSERT_EQ(NandMedia::create_file(path, small_geo(), &m, &err), 0) << err;
    NandModel n(m, NandModelOptions{});
    std::string d = pattern('z', 512), o = "\xff\xff" + pattern('\x42', 30);
    ASSERT_EQ(n.erase_block(9), 0);
    ASSERT_EQ(n.program_page(9, 3, d.data(), o.data()), 0);
    ASSERT_EQ(n.sync(), 0);
  }
  std::shared_ptr<NandMedia> m;
  ASSERT_EQ(NandMedia::open_file(path, &m, &err), 0) << err;
  EXPECT_EQ(m->geometry(), small_geo());
  NandModel n(m, NandModelOptions{});
  std::string d(512, 0), o(32, 0);
  ASSERT_EQ(n.read_page(9, 3, &d[0], &o[0]), 0);
  EXPECT_EQ(d, pattern('z', 512));
  EXPECT_EQ(o, "\xff\xff" + pattern('\x42', 30));
  EXPECT_EQ(n.wear(9), 1u);
  EXPECT_EQ(n.program_page(9, 3, d.data(), nullptr), -EINVAL);
}

TEST(NandMediaTest, CreatingOverAnExistingFileFails) {
  TempDir dir;
  std::string err;
  std::shared_ptr<NandMedia> m;
  ASSERT_EQ(NandMedia::create_file(dir.file("f"), small_geo(), &m, &err), 0);
  std::shared_ptr<NandMedia> m2;
  EXPECT_EQ(NandMedia::create_file(dir.file("f"), small_geo(), &m2, &err), -EEXIST);
}

TEST(NandMediaTest, DamagedOrForeignFilesAreRejected) {
  TempDir dir;
  std::string err;
  std::string path = dir.file("f");
  {
    std::shared_ptr<NandMedia> m;
    ASSERT_EQ(NandMedia::create_file(path, small_geo(), &m, &err), 0);
  }
  // Flip one byte of the 30-byte header record at a time: never accepted,
  // never a crash.
  for (int i = 0; i < 30; ++i) {
    FILE* f = fopen(path.c_str(), "r+b");
    ASSERT_TRUE(f);
    fseek(f, i, SEEK_SET);
    int c = fgetc(f);
    fseek(f, i, SEEK_SET);
    fputc(c ^ 0x20, f);
    fclose(f);
    std::shared_ptr<NandMedia> m;
    EXPECT_LT(NandMedia::open_file(path, &m, &err), 0) << "byte " << i;
    f = fopen(path.c_str(), "r+b");
    fseek(f, i, SEEK_SET);
    fputc(c, f);
    fclose(f);
  }
  FILE* f = fopen(dir.file("text").c_str(), "w");
  fputs("this is not a flash image, just some text that is long enough", f);
  fclose(f);
  std::shared_ptr<NandMedia> m;
  EXPECT_EQ(NandMedia::open_file(dir.file("text"), &m, &err), -EINVAL);
}

TEST(NandGeometryTest, RejectsGeometriesOutOfRange) {
  std::string err;
  NandGeometry g = small_geo();
  EXPECT_EQ(g.validate(&err), 0);
  g.page_size = 1000;
  EXPECT_EQ(g.validate(&err), -EINVAL);
  g = small_geo();
  g.oob_size = 16;
  EXPECT_EQ(g.validate(&err), -EINVAL);
  g = small_geo();
  g.pages_per_block = 2;
  EXPECT_EQ(g.validate(&err), -EINVAL);
}
