// Options of the section component; each entry documents itself in the registry.
#include "hsoptions/option_tables.h"

namespace hybridstore {

void add_section_options(std::vector<OptionSpec>* v) {
  using T = OptionType;
  // 256 B rather than the papers' 1 KiB: the unused part of each object's last
  // block alone costs 8.7% of the SSD at 1 KiB under PostMark sizes, 2.3% at
  // 256 B (docs/hfm-allocation.md); extents are written whole, so blocks below
  // the device sector cost no extra I/O.
  v->push_back({"hybridstore_ssd_block_size", T::kSize, "256",
                "allocation block of the SSD sections; smaller than the device sector is fine "
                "because extents are written whole",
                "256", "64K", {}, true, true});
  v->push_back({"hybridstore_ssd_sections", T::kString,
                "small:8K:rho1,mid:128K:rho3:delta4,large:512K:rho3:delta32",
                "SSD data sections, comma separated: name:extent:rho1|rho2|rho3[:delta<N>]"
                "[:theta<N>][:hfm|rehypar][:holes=fill|clean][:gaps=on|off]"
                "[:remainder=down|table|fresh], or name:bypass",
                "", "", {}, true});
  v->push_back({"hybridstore_ssd_section_rules", T::kString, "",
                "static object-to-section mapping, ';' separated: "
                "pool:<n>|ns:<s>|coll:<s>|prefix:<s>[&...]=<section>|bypass|auto; "
                "objects no rule matches are mapped by size"});
  v->push_back({"hybridstore_flash_erase_block", T::kSize, "1M",
                "flash erase block: extents smaller than it are collected until a whole block "
                "is written in one aligned I/O; 0 = unknown (each extent written alone)",
                "0", "1G", {}, true});
  v->push_back({"hybridstore_ssd_section_theta_ratio", T::kDouble, "0.03125",
                "default theta of a section as a fraction of its extent: an extent whose free "
                "tail drops below theta is sealed (at least one block)",
                "0", "0.5"});
  v->push_back({"hybridstore_ssd_section_policy", T::kString, "rehypar",
                "default extent selection policy of a section: hfm (longest in the map table) "
                "or rehypar (best fit, then nearest neighbour)",
                "", "", {"hfm", "rehypar"}});
  v->push_back({"hybridstore_ssd_staging_timeout", T::kDouble, "5",
                "seconds a write unit may stay staged in memory before it is sealed and "
                "written partly filled",
                "0.001", "3600"});
  v->push_back({"hybridstore_ssd_max_staged_units", T::kInt, "4",
                "write units a section lane keeps staged besides the newest before the oldest "
                "is written partly filled",
                "1", "1024"});
  v->push_back({"hybridstore_ssd_direct_units", T::kBool, "true",
                "write units an allocation fills alone (large objects, migrations) are written "
                "to the SSD before the transaction commits, as one I/O each, instead of being "
                "staged through RocksDB until the unit is written; false = stage everything"});
  v->push_back({"hybridstore_ssd_placements_resident", T::kBool, "false",
                "keep every written extent's placements in memory after a mount (32 B an "
                "object on the SSD); false = leave them in the extents' records and read an "
                "extent's back when a release, a hole fill, the cleaner or fsck needs them"});
  v->push_back({"hybridstore_ssd_hole_fill_below", T::kDouble, "0.05",
                "fraction of free erase units under which sections with holes=fill put new "
                "data into holes of written extents (in place) before taking clean extents",
                "0", "1"});
  v->push_back({"hybridstore_ssd_hotness_groups", T::kInt, "4",
                "hotness groups: each erase unit holds data of one group only", "1", "16", {},
                true});
  v->push_back({"hybridstore_ssd_cleaner_policy", T::kString, "cost-hotness",
                "victim choice when reclaiming holes", "", "",
                {"greedy", "cost-benefit", "cost-hotness"}});
  v->push_back({"hybridstore_ssd_cleaner_hotness_exponent", T::kDouble, "0.5",
                "e in cost-hotness's victim score (1 - u) / (2 u H^e): 0.5 gives hot data "
                "free space growing with the square root of its update rate, 1 is the SFS "
                "paper's formula",
                "0", "2"});
  v->push_back({"hybridstore_ssd_cleaner_start_free", T::kDouble, "0.05",
                "start cleaning when the fraction of free erase units drops below this", "0",
                "0.9"});
  v->push_back({"hybridstore_ssd_cleaner_stop_free", T::kDouble, "0.08",
                "stop cleaning once the fraction of free erase units reaches this", "0", "0.95"});
  v->push_back({"hybridstore_ssd_cleaner_max_live", T::kDouble, "0.95",
                "never clean an erase unit whose live fraction is above this (spill instead)",
                "0", "1"});
}

}  // namespace hybridstore
