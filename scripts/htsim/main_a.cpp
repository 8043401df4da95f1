// aqmlab's benchmark scenario A on htsim, for scripts/htsim/compare.py.
//
// N DCTCP flows share one bottleneck: each a DCTCPSrc sending through one
// ECNQueue (10 Gbit/s, 250-packet buffer, marking at K = 65 packets) and a
// 50 us pipe to its TcpSink, whose ACKs return through a second 50 us pipe
// (100 us base RTT). Sources inject straight into the bottleneck. ssthresh
// 10 MSS, a 10 ms retransmission-timer scanner, starts drawn uniform over
// [0, 1 ms] with srand(1), 1500-byte packets.
//
// Counted: departures from the bottleneck (a QueueLogger on that queue, no
// other logging). Timed: the event loop alone (steady_clock).
//
// usage: htsim_a [flows=10] [sim_seconds=10]
// Result: one JSON line on stdout, after htsim's own output:
//   {"flows": N, "pkts": P, "wall_s": W, "pkts_per_s": R}
#include "config.h"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include "network.h"
#include "pipe.h"
#include "eventlist.h"
#include "loggers.h"
#include "ecnqueue.h"
#include "tcp.h"
#include "dctcp.h"
#include "route.h"

namespace {

// Counts the packets a queue finishes serving (its departures).
class DepartureCounter : public QueueLogger {
  public:
    uint64_t departures = 0;
    void logQueue(BaseQueue&, QueueEvent event, Packet&) override {
        if (event == PKT_SERVICE) departures++;
    }
};

int usage(const char* why) {
    fprintf(stderr, "htsim_a: %s (usage: htsim_a [flows>=1] [sim_seconds>0])\n", why);
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    const int n_flows = argc > 1 ? atoi(argv[1]) : 10;
    const double sim_s = argc > 2 ? atof(argv[2]) : 10.0;
    if (argc > 3) return usage("too many arguments");
    if (n_flows < 1) return usage("flows must be a positive integer");
    if (!(sim_s > 0)) return usage("sim_seconds must be positive");

    EventList& events = EventList::getTheEventList();
    events.setEndtime(timeFromSec(sim_s));
    Packet::set_packet_size(1500);

    DepartureCounter counter;
    ECNQueue bottleneck(speedFromMbps(10000.0), memFromPkt(250), events, &counter, memFromPkt(65));
    Pipe to_sinks(timeFromUs(50.0), events);
    Pipe to_sources(timeFromUs(50.0), events);
    TcpRtxTimerScanner rto_scanner(timeFromMs(10), events);

    srand(1);
    for (int i = 0; i < n_flows; i++) {
        DCTCPSrc* src = new DCTCPSrc(NULL, NULL, events);
        TcpSink* sink = new TcpSink();
        src->set_ssthresh(10 * Packet::data_packet_size());
        rto_scanner.registerTcp(*src);
        // Data: bottleneck, pipe, sink. ACKs: pipe, source.
        Route* data_path = new Route();
        data_path->push_back(&bottleneck);
        data_path->push_back(&to_sinks);
        data_path->push_back(sink);
        Route* ack_path = new Route();
        ack_path->push_back(&to_sources);
        ack_path->push_back(src);
        // A start in [0, 1 ms] in steps of 1 ns.
        const double start_us = (double)(rand() % 1000001) / 1000.0;
        src->connect(*data_path, *ack_path, *sink, timeFromUs(start_us));
    }

    const auto t0 = std::chrono::steady_clock::now();
    while (events.doNextEvent()) {
    }
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    printf("{\"flows\": %d, \"pkts\": %llu, \"wall_s\": %.4f, \"pkts_per_s\": %.0f}\n", n_flows,
           (unsigned long long)counter.departures, wall_s, counter.departures / wall_s);
    return 0;
}
