// Parsing hybridstore_ssd_sections and hybridstore_ssd_section_rules, and
// mapping objects to sections.
#include <gtest/gtest.h>

#include "hscommon/config.h"
#include "hybridstore/sections/section_config.h"
#include "hybridstore/sections/section_rules.h"

namespace hybridstore {
namespace {

std::vector<SectionSpec> parse(const std::string& text, uint32_t bs = 1024) {
  SectionDefaults d;
  d.block_size = bs;
  std::vector<SectionSpec> v;
  std::string err;
  EXPECT_EQ(parse_sections(text, d, &v, &err), 0) << err;
  return v;
}

std::string parse_error(const std::string& text) {
  std::vector<SectionSpec> v;
  std::string err;
  EXPECT_EQ(parse_sections(text, SectionDefaults{}, &v, &err), -EINVAL) << text;
  return err;
}

TEST(SectionConfig, ParsesTheIssueExample) {
  auto v = parse("small:8K:rho1,mid:64K:rho2,large:512K:rho3:delta32");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].name, "small");
  EXPECT_EQ(v[0].extent_blocks, 8u);
  EXPECT_EQ(v[0].mode, PartitionMode::kRho1);
  EXPECT_EQ(v[1].extent_blocks, 64u);
  EXPECT_EQ(v[1].mode, PartitionMode::kRho2);
  EXPECT_EQ(v[2].extent_blocks, 512u);
  EXPECT_EQ(v[2].delta, 32u);
  EXPECT_EQ(v[2].theta, 16u);  // default ratio 1/32
  EXPECT_EQ(v[0].theta, 1u);   // at least one block
}

TEST(SectionConfig, OptionalFieldsAndBypass) {
  auto v = parse("a:16K:rho3:delta=4:theta2K:hfm:holes=clean:gaps=off, b:bypass");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].delta, 4u);
  EXPECT_EQ(v[0].theta, 2u);
  EXPECT_EQ(v[0].policy, SelectionPolicy::kHfm);
  EXPECT_EQ(v[0].holes, HoleMode::kClean);
  EXPECT_FALSE(v[0].fill_gaps);
  EXPECT_TRUE(v[1].bypass());
  // rho3 without delta takes 32, capped at the extent.
  EXPECT_EQ(parse("x:8K:rho3")[0].delta, 8u);
}

TEST(SectionConfig, FormatRoundTrips) {
  auto v = parse("small:8K:rho1:hfm,mid:64K:rho2:theta3,large:512K:rho3:delta16,b:bypass");
  std::string text = format_sections(v, 1024);
  auto w = parse(text);
  EXPECT_EQ(format_sections(w, 1024), text);
  EXPECT_NE(text.find("large:512K:rho3:delta16"), std::string::npos) << text;
}

TEST(SectionConfig, RejectsBadSectionsWithTheirName) {
  EXPECT_NE(parse_error("a:12K:rho1").find("'a'"), std::string::npos);
  EXPECT_NE(parse_error("a:8K").find("missing rho"), std::string::npos);
  EXPECT_NE(parse_error("a:8K:rho4").find("unknown field"), std::string::npos);
  EXPECT_NE(parse_error("a:8K:rho1:delta4").find("rho3 only"), std::string::npos);
  EXPECT_NE(parse_error("a:64K:rho3:delta3").find("delta"), std::string::npos);
  EXPECT_NE(parse_error("a:8K:rho1,a:16K:rho1").find("twice"), std::string::npos);
  EXPECT_NE(parse_error("Big:8K:rho1").find("name"), std::string::npos);
  EXPECT_NE(parse_error("auto:8K:rho1").find("reserved"), std::string::npos);
  EXPECT_NE(parse_error("a:bypass:rho1").find("bypass"), std::string::npos);
  EXPECT_NE(parse_error("a:8K:rho1:theta9").find("theta"), std::string::npos);
  EXPECT_NE(parse_error("a:1K:rho1").find("power-of-two"), std::string::npos);
  EXPECT_FALSE(parse_error("").empty());
}

TEST(SectionConfig, DefaultOptionValueParses) {
  Config cfg;
  std::vector<SectionSpec> v;
  std::string err;
  ASSERT_EQ(parse_sections(cfg.get_str("hybridstore_ssd_sections"),
                           SectionDefaults::from_config(cfg), &v, &err),
            0)
      << err;
  EXPECT_GE(v.size(), 1u);
  SectionRouter r;
  EXPECT_EQ(SectionRouter::make(v, 1024, cfg.get_str("hybridstore_ssd_section_rules"), &r, &err),
            0)
      << err;
}

TEST(SectionRouter, DynamicMappingFollowsHfm) {
  auto v = parse("small:8K:rho1,mid:64K:rho2,large:512K:rho3");
  SectionRouter r;
  std::string err;
  ASSERT_EQ(SectionRouter::make(v, 1024, "", &r, &err), 0) << err;
  EXPECT_EQ(r.route_by_size(500), 0);
  EXPECT_EQ(r.route_by_size(8192), 0);        // len <= x -> D1
  EXPECT_EQ(r.route_by_size(8193), 1);        // else D2
  EXPECT_EQ(r.route_by_size(300 << 10), 1);   // still D2 below z
  EXPECT_EQ(r.route_by_size(512 << 10), 2);   // len >= z -> D3
  EXPECT_EQ(r.route_by_size(4 << 20), 2);
}

TEST(SectionRouter, FourSectionsUseTheSmallestThatHoldsTheObject) {
  auto v = parse("a:4K:rho1,b:16K:rho1,c:64K:rho2,d:1M:rho3");
  SectionRouter r;
  std::string err;
  ASSERT_EQ(SectionRouter::make(v, 1024, "", &r, &err), 0);
  EXPECT_EQ(r.route_by_size(10 << 10), 1);
  EXPECT_EQ(r.route_by_size(40 << 10), 2);
  EXPECT_EQ(r.route_by_size(200 << 10), 2);  // between the two largest: the middle
}

TEST(SectionRouter, StaticRulesFirstMatchWins) {
  auto v = parse("small:8K:rho1,mid:64K:rho2,large:512K:rho3,cold:bypass");
  SectionRouter r;
  std::string err;
  ASSERT_EQ(SectionRouter::make(v, 1024,
                                "pool:7=bypass; pool:3&prefix:rbd_data.=large; ns:mail=small;"
                                " coll:a%3Bb=cold; prefix:auto_=auto",
                                &r, &err),
            0)
      << err;
  EXPECT_EQ(r.rules().size(), 5u);
  EXPECT_EQ(r.route({7, "", "", "x"}, 100), SectionRouter::kBypass);
  EXPECT_EQ(r.route({3, "", "", "rbd_data.123"}, 100), 2);
  EXPECT_EQ(r.route({3, "", "", "rbd_header.1"}, 100), 0);  // no rule: by size
  EXPECT_EQ(r.route({1, "mail", "", "m"}, 1 << 20), 0);
  EXPECT_EQ(r.route({1, "", "a;b", "m"}, 100), SectionRouter::kBypass);  // bypass section
  EXPECT_EQ(r.route({1, "", "", "auto_x"}, 100 << 10), 1);
  std::string text = format_section_rules(r.rules(), v);
  SectionRouter r2;
  ASSERT_EQ(SectionRouter::make(v, 1024, text, &r2, &err), 0) << err << " in " << text;
  EXPECT_EQ(format_section_rules(r2.rules(), v), text);
}

TEST(SectionRouter, RejectsBadRules) {
  auto v = parse("small:8K:rho1");
  SectionRouter r;
  std::string err;
  EXPECT_EQ(SectionRouter::make(v, 1024, "pool:1=nosuch", &r, &err), -EINVAL);
  EXPECT_NE(err.find("nosuch"), std::string::npos);
  EXPECT_EQ(SectionRouter::make(v, 1024, "pool:x=small", &r, &err), -EINVAL);
  EXPECT_EQ(SectionRouter::make(v, 1024, "color:red=small", &r, &err), -EINVAL);
  EXPECT_EQ(SectionRouter::make(v, 1024, "pool:1", &r, &err), -EINVAL);
  EXPECT_EQ(SectionRouter::make(v, 1024, "=small", &r, &err), -EINVAL);
  EXPECT_EQ(SectionRouter::make(v, 1024, "ns:a%4=small", &r, &err), -EINVAL);
  EXPECT_EQ(SectionRouter::make(v, 1024, "pool:1&pool:2=small", &r, &err), -EINVAL);
  EXPECT_EQ(SectionRouter::make(v, 1024, " ; ;", &r, &err), 0);
  EXPECT_TRUE(r.rules().empty());
}

TEST(SectionRouter, OnlyBypassSectionsSendEverythingToTheHdd) {
  auto v = parse("cold:bypass");
  SectionRouter r;
  std::string err;
  ASSERT_EQ(SectionRouter::make(v, 1024, "", &r, &err), 0);
  EXPECT_EQ(r.route_by_size(4096), SectionRouter::kBypass);
}

}  // namespace
}  // namespace hybridstore
