// Options of the ftl component: the SSD tier on raw NAND through the embedded
// hUBI FTL (src/ftl/). Each entry documents itself in the registry.
#include "hsoptions/option_tables.h"

namespace hybridstore {

void add_ftl_options(std::vector<OptionSpec>* v) {
  using T = OptionType;
  v->push_back({"hybridstore_ssd_kind", T::kString, "file",
                "what the SSD tier is: a file or block device, or raw NAND flash driven by the "
                "embedded FTL (the flash is simulated in the file at hybridstore_ssd_path)",
                "", "", {"file", "nand"}, true});
  // NAND geometry (fixed when the flash file is created; an existing flash
  // file keeps its own).
  v->push_back({"hybridstore_nand_page_size", T::kSize, "2K",
                "NAND page size: the FTL's sector size", "512", "64K", {}, true, true});
  v->push_back({"hybridstore_nand_pages_per_block", T::kInt, "128",
                "NAND pages per erase block", "4", "4096", {}, true});
  v->push_back({"hybridstore_nand_oob_size", T::kInt, "64",
                "NAND out-of-band (spare) bytes per page", "32", "4096", {}, true});
  v->push_back({"hybridstore_nand_size", T::kSize, "1G",
                "raw NAND capacity (data bytes, OOB excluded); the usable size is smaller by "
                "the FTL's log areas and reserves",
                "4M", "", {}, true});
  // Timing model (virtual clock). `none` costs nothing; `paper` is the hUBI
  // paper's Table I; `custom` uses the four values below.
  v->push_back({"hybridstore_nand_timing", T::kString, "none",
                "NAND timing model charged on the FTL's virtual clock", "", "",
                {"none", "paper", "custom"}});
  v->push_back({"hybridstore_nand_t_read_us", T::kDouble, "50",
                "page read time t_r in microseconds (timing = custom)", "0", "1000000"});
  v->push_back({"hybridstore_nand_t_prog_us", T::kDouble, "800",
                "page program time t_w in microseconds (timing = custom)", "0", "1000000"});
  v->push_back({"hybridstore_nand_t_erase_us", T::kDouble, "1500",
                "block erase time t_e in microseconds (timing = custom)", "0", "1000000"});
  v->push_back({"hybridstore_nand_t_xfer_us", T::kDouble, "50",
                "page transfer time t_x in microseconds (timing = custom)", "0", "1000000"});
  v->push_back({"hybridstore_nand_emulate_latency", T::kBool, "false",
                "make each request to the NAND device take (in wall-clock time) the NAND time "
                "the timing model charges for it, so the engine sees the simulated chip's "
                "latency; without it the timing only feeds statistics"});
  v->push_back({"hybridstore_nand_endurance", T::kInt, "0",
                "erase cycles a block survives before erases fail (0 = unlimited)", "0", ""});
  v->push_back({"hybridstore_nand_bitflip_rate", T::kDouble, "0",
                "probability that a page read needs ECC correction (the FTL then scrubs the "
                "block)",
                "0", "1"});
  // FTL.
  v->push_back({"hybridstore_ftl_policy", T::kString, "hubi",
                "mapping policy: ubi (block mapping), pubi (partitions with shared log blocks), "
                "hubi (per-block log area, single-block merges)",
                "", "", {"ubi", "pubi", "hubi"}, true});
  v->push_back({"hybridstore_ftl_data_pages", T::kInt, "0",
                "hubi: data-area pages per block (d); 0 = the paper's 100 of 128", "0", "4095",
                {}, true});
  v->push_back({"hybridstore_ftl_log_pages", T::kInt, "0",
                "hubi: log-area pages per block (l); 0 = the paper's 26 of 128", "0", "4095", {},
                true});
  v->push_back({"hybridstore_ftl_partition_data_blocks", T::kInt, "16",
                "pubi: data blocks per partition (D)", "1", "4096", {}, true});
  v->push_back({"hybridstore_ftl_partition_log_blocks", T::kInt, "4",
                "pubi: log blocks per partition (L)", "1", "4096", {}, true});
  v->push_back({"hybridstore_ftl_bad_block_reserve", T::kInt, "20",
                "blocks per 1024 kept in reserve for grown bad blocks (UBI's default is 20)", "0",
                "768", {}, true});
  v->push_back({"hybridstore_ftl_background_merge", T::kBool, "false",
                "hubi: merge and erase in background steps (a pre-erased spare block, merges "
                "started at a watermark) so that no write waits for a whole merge"});
  v->push_back({"hybridstore_ftl_merge_watermark", T::kInt, "0",
                "hubi background mode: free log pages left when a merge is queued (0 = l/8)", "0",
                "4095"});
  v->push_back({"hybridstore_ftl_background_steps", T::kInt, "0",
                "hubi background mode: merge/erase steps run after each written page when the "
                "flash is never idle (0 = derived from d and the watermark)",
                "0", "4096"});
  v->push_back({"hybridstore_ftl_wl_threshold", T::kInt, "256",
                "wear levelling: erase-counter spread that triggers moving cold data (UBI "
                "advises 128-256 for MLC)",
                "2", "65536"});
  v->push_back({"hybridstore_ftl_cache", T::kString, "lazy",
                "one-LEB write-back cache: off, lazy (holds written pages only) or mtdblock "
                "(reads the whole LEB on a write miss, as Linux mtdblock)",
                "", "", {"off", "lazy", "mtdblock"}});
}

}  // namespace hybridstore
