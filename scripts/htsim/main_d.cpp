// aqmlab's benchmark scenarios D and D-1024 on htsim's own fat tree, for
// scripts/htsim/compare.py.
//
// Topology: htsim's FatTreeTopology, three tiers, k-ary (k^3/4 hosts),
// 10 Gbit/s links, 1 us per link, no switching latency, every queue (switch
// ports and host NICs) an ECNQueue with a 250-packet buffer marking at
// K = 65 packets, 1500-byte packets. The stock topology hard-codes K = 15
// packets and gives host NICs a queue without marking; the copy of
// fat_tree_topology.cpp that patch_fat_tree.py writes makes K the global
// fat_tree_ecn_k and adds an ECN case for host NICs (README.md).
//
// Traffic, DCTCPSrc + TcpSink pairs, ssthresh 10 MSS, one 10 ms
// retransmission-timer scanner (as in htsim_a):
//  - every host sends one long flow to another host, a random permutation
//    from htsim's ConnectionMatrix::setPermutation(); starts uniform over
//    [0, 1 ms];
//  - every 10 ms from 10 ms on, an incast: 32 distinct random senders each
//    send 64 000 bytes (aqmlab's "64KB") to one random host.
// Each flow takes one of the paths the topology enumerates between its two
// hosts, drawn at random; its ACKs take the path with the same index in the
// other direction (the mirror path).
//
// Counted as aqmlab counts packet-hops: every data packet and ACK leaving
// any queue, host NICs included (one QueueLogger on every queue), and the
// events the loop runs. Timed: the event loop alone (steady_clock).
//
// usage: htsim_d [k=8] [sim_ms=100] [seed=1] [count=1]
//   scenario D: htsim_d 8 100; D-1024: htsim_d 16 20.
//   count=0 leaves the counting logger off (to time htsim without it; the
//   counts are those of a count=1 run with the same seed, htsim being
//   deterministic for a seed).
// htsim's own messages go to stdout. stderr gets one line per incast flow
// that did not finish, then the result as one JSON line.
#include "config.h"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <utility>
#include <vector>
#include "network.h"
#include "pipe.h"
#include "eventlist.h"
#include "loggers.h"
#include "ecnqueue.h"
#include "tcp.h"
#include "dctcp.h"
#include "route.h"
#include "fat_tree_topology.h"
#include "connection_matrix.h"

extern mem_b fat_tree_ecn_k;  // defined by the patched fat_tree_topology.cpp

namespace {

const int kIncastSenders = 32;
const uint64_t kIncastBytes = 64000;
const double kIncastFirstMs = 10.0;
const double kIncastPeriodMs = 10.0;

// Packet-hops by kind: a departure from any queue.
class HopCounter : public QueueLogger {
  public:
    uint64_t data = 0, acks = 0, other = 0;
    void logQueue(BaseQueue&, QueueEvent event, Packet& pkt) override {
        if (event != PKT_SERVICE) return;
        switch (pkt.type()) {
            case TCP: data++; break;
            case TCPACK: acks++; break;
            default: other++; break;
        }
    }
};

// Every queue of the tree: both directions of each tier's links; the
// host-to-ToR direction holds the host NICs.
std::vector<BaseQueue*> all_queues(FatTreeTopology& tree) {
    std::vector<BaseQueue*> out;
    const std::vector<std::vector<std::vector<BaseQueue*>>>* tiers[] = {
        &tree.queues_ns_nlp, &tree.queues_nlp_ns, &tree.queues_nlp_nup,
        &tree.queues_nup_nlp, &tree.queues_nup_nc, &tree.queues_nc_nup};
    for (auto tier : tiers)
        for (auto& from : *tier)
            for (auto& to : from)
                for (BaseQueue* q : to)
                    if (q) out.push_back(q);
    return out;
}

struct Flow {
    DCTCPSrc* src;
    uint32_t from, to;
    int incast;  // index of its incast, -1 for a permutation flow
};

class Traffic {
  public:
    Traffic(FatTreeTopology& tree, EventList& events, TcpRtxTimerScanner& scanner)
        : tree_(tree), events_(events), scanner_(scanner) {}

    // One flow; size 0 is unbounded. Draws its path index with rand().
    void add(uint32_t from, uint32_t to, double start_us, uint64_t size, int incast) {
        DCTCPSrc* src = new DCTCPSrc(NULL, NULL, events_);
        TcpSink* sink = new TcpSink();
        src->set_ssthresh(10 * Packet::data_packet_size());
        if (size) src->set_flowsize(size);
        scanner_.registerTcp(*src);
        const std::vector<const Route*>* there = paths(from, to);
        const std::vector<const Route*>* back = paths(to, from);
        const uint32_t pick = rand() % there->size();
        Route* data_path = new Route(*there->at(pick));
        data_path->push_back(sink);
        Route* ack_path = new Route(*back->at(pick));
        ack_path->push_back(src);
        src->connect(*data_path, *ack_path, *sink, timeFromUs(start_us));
        flows.push_back(Flow{src, from, to, incast});
    }

    std::vector<Flow> flows;

  private:
    // The topology builds a host pair's path list on each call; keep one.
    const std::vector<const Route*>* paths(uint32_t from, uint32_t to) {
        auto key = std::make_pair(from, to);
        auto hit = cache_.find(key);
        if (hit != cache_.end()) return hit->second;
        const std::vector<const Route*>* p = tree_.get_bidir_paths(from, to, false);
        cache_[key] = p;
        return p;
    }

    FatTreeTopology& tree_;
    EventList& events_;
    TcpRtxTimerScanner& scanner_;
    std::map<std::pair<uint32_t, uint32_t>, const std::vector<const Route*>*> cache_;
};

int usage(const char* why) {
    fprintf(stderr, "htsim_d: %s (usage: htsim_d [k: even, >=4] [sim_ms>0] [seed] [count: 0|1])\n", why);
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    const int k = argc > 1 ? atoi(argv[1]) : 8;
    const double sim_ms = argc > 2 ? atof(argv[2]) : 100.0;
    const unsigned seed = argc > 3 ? (unsigned)atoi(argv[3]) : 1;
    const int count = argc > 4 ? atoi(argv[4]) : 1;
    if (argc > 5) return usage("too many arguments");
    if (k < 4 || k % 2) return usage("k must be even and at least 4");
    if (!(sim_ms > 0)) return usage("sim_ms must be positive");
    if (count != 0 && count != 1) return usage("count must be 0 or 1");

    EventList& events = EventList::getTheEventList();
    events.setEndtime(timeFromMs(sim_ms));
    Packet::set_packet_size(1500);
    srand(seed);
    fat_tree_ecn_k = memFromPkt(65);
    const uint32_t n_hosts = (uint32_t)(k * k * k / 4);

    // Arguments: hosts, link rate, buffer, no logger factory, the event
    // list, no FirstFit, switch queues ECN, link latency, switch latency,
    // host NIC queues ECN (the patched case).
    FatTreeTopology* tree = new FatTreeTopology(n_hosts, speedFromMbps(10000.0), memFromPkt(250), NULL, &events,
                                                NULL, ECN, timeFromUs(1.0), 0, ECN);
    const std::vector<BaseQueue*> queues = all_queues(*tree);
    HopCounter hops;
    if (count)
        for (BaseQueue* q : queues) q->setLogger(&hops);

    TcpRtxTimerScanner scanner(timeFromMs(10), events);
    Traffic traffic(*tree, events, scanner);

    ConnectionMatrix matrix(n_hosts);
    matrix.setPermutation();
    for (auto& entry : matrix.connections)
        for (uint32_t to : *entry.second) {
            const double start_us = (double)(rand() % 1000001) / 1000.0;  // [0, 1 ms], 1 ns steps
            traffic.add(entry.first, to, start_us, 0, -1);
        }
    const uint32_t n_permutation = (uint32_t)traffic.flows.size();

    int n_incasts = 0;
    for (double at_ms = kIncastFirstMs; at_ms < sim_ms; at_ms += kIncastPeriodMs, n_incasts++) {
        const uint32_t receiver = rand() % n_hosts;
        std::vector<uint32_t> others;
        for (uint32_t h = 0; h < n_hosts; h++)
            if (h != receiver) others.push_back(h);
        // The first kIncastSenders of a partial Fisher-Yates shuffle.
        for (int i = 0; i < kIncastSenders && i < (int)others.size(); i++) {
            const uint32_t j = i + rand() % (others.size() - i);
            std::swap(others[i], others[j]);
            traffic.add(others[i], receiver, at_ms * 1000.0, kIncastBytes, n_incasts);
        }
    }
    fflush(stdout);

    uint64_t n_events = 0;
    const auto t0 = std::chrono::steady_clock::now();
    while (events.doNextEvent()) n_events++;
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fflush(stdout);

    // Sanity figures: the permutation's goodput, incast completions, drops.
    const double sim_s = sim_ms / 1000.0;
    double gbps_sum = 0, gbps_min = 1e18, gbps_max = 0;
    int n_incast_flows = 0, n_incast_done = 0;
    for (const Flow& f : traffic.flows) {
        if (f.incast < 0) {
            const double gbps = (double)f.src->_last_acked * 8 / sim_s / 1e9;
            gbps_sum += gbps;
            if (gbps < gbps_min) gbps_min = gbps;
            if (gbps > gbps_max) gbps_max = gbps;
            continue;
        }
        n_incast_flows++;
        if (f.src->_last_acked >= kIncastBytes) {
            n_incast_done++;
        } else {
            fprintf(stderr, "unfinished incast flow: round %d, %u->%u, acked %llu, sent %llu, rto_ms %.1f\n",
                    f.incast, f.from, f.to, (unsigned long long)f.src->_last_acked,
                    (unsigned long long)f.src->_highest_sent, timeAsMs(f.src->_rto));
        }
    }
    uint64_t drops = 0;
    for (BaseQueue* q : queues) drops += ((Queue*)q)->num_drops();
    const uint64_t packet_hops = hops.data + hops.acks + hops.other;

    fprintf(stderr,
            "{\"k\": %d, \"hosts\": %u, \"queues\": %llu, \"sim_ms\": %.1f, \"seed\": %u, \"counted\": %d, "
            "\"perm_flows\": %u, \"incasts\": %d, \"incast_flows\": %d, \"incast_done\": %d, "
            "\"packet_hops\": %llu, \"data_hops\": %llu, \"ack_hops\": %llu, \"other_hops\": %llu, "
            "\"events\": %llu, \"events_per_hop\": %.3f, \"drops\": %llu, "
            "\"perm_goodput_gbps_mean\": %.3f, \"min\": %.3f, \"max\": %.3f, "
            "\"wall_s\": %.4f, \"hops_per_s\": %.0f, \"events_per_s\": %.0f}\n",
            k, n_hosts, (unsigned long long)queues.size(), sim_ms, seed, count, n_permutation, n_incasts,
            n_incast_flows, n_incast_done, (unsigned long long)packet_hops, (unsigned long long)hops.data,
            (unsigned long long)hops.acks, (unsigned long long)hops.other, (unsigned long long)n_events,
            packet_hops ? (double)n_events / packet_hops : 0.0, (unsigned long long)drops,
            gbps_sum / n_permutation, gbps_min, gbps_max, wall_s, packet_hops / wall_s, n_events / wall_s);
    return 0;
}
