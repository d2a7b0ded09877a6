// Options of the full-vocabulary without-replacement route (docs/theory.md §15): the sizes of
// its exact parts and the caps on its retries.
#pragma once

#include <cstdint>

namespace mdsd::verif::wor {

struct Options {
    int exact_head = 8;                    // neediest inner tokens swept exactly on top ("top" order)
    int64_t event_head = 256;              // tokens of the prefix-event heads ("chain", "events")
    int64_t last_resort_head = 1024;       // the same, for the last resort (O(head^2) scans)
    double last_resort_gap = 1e-5;         // rows short by at most this get the last resort
    int chain_depth = 8;                   // levels of needy groups, each a chain on top of the next
    int64_t jump_scan = 2048;              // prefixes scanned for the end of that group
    int chain_retries = 8;                 // regroupings of one chain level on a violated visit
    int64_t chain_calls = 512;             // chains per order before retries stop (they nest)
    int outer_moves = 32;                  // re-orderings of the outer chain (2 core passes each)
    int max_rounds = 64;                   // rounds of safe outer moves
    double violation_tol = 1e-12;          // relative: a removal slack below it is a violation
    int64_t law_bytes = int64_t{256} << 20;  // marked law tables (core_law)
    double certify_tol = 1e-9;             // alpha* - acceptance accepted as "optimal"
};

}  // namespace mdsd::verif::wor
