// migrate --now: one tiering pass on a stopped store.
#include <cstdio>

#include "hscommon/config.h"
#include "hybridstore/tier/migrator.h"
#include "store_access.h"

namespace hybridstore::tool {
namespace {

ToolCommand migrate_cmd("migrate", "move objects between tiers by their heat (hybridstore_tier_policy)",
                        [](CLI::App* sub, GlobalArgs* args) {
                          auto now = std::make_shared<bool>(false);
                          sub->add_flag("--now", *now, "run one planning and migration pass now")->required();
                          return [args, now] {
                            auto store = mount_store(*args);
                            if (!store) return 1;
                            StoreStats before;
                            store->statfs(&before);
                            MigrationReport rep;
                            int r = store->migrate_now(&rep);
                            StoreStats after;
                            store->statfs(&after);
                            store->umount();
                            if (r < 0) return fail("migrate", r);
                            printf("policy %s, SSD budget %s: %zu objects considered\n", rep.policy.c_str(),
                                   format_size(rep.ssd_budget).c_str(), rep.objects);
                            printf("promoted %zu, demoted %zu, skipped %zu, retried %zu; moved %s in %.2f s\n",
                                   rep.promoted, rep.demoted, rep.skipped, rep.retries,
                                   format_size(rep.bytes_moved).c_str(), rep.seconds);
                            for (Tier t : after.order) {  // fastest first
                              printf("%s used: %s -> %s\n", tier_name(t),
                                     format_size(before.tier[t].allocated).c_str(),
                                     format_size(after.tier[t].allocated).c_str());
                            }
                            return 0;
                          };
                        });

}  // namespace
}  // namespace hybridstore::tool
