//! A shared half-duplex medium: the simple WLAN bottleneck model of
//! docs/algorithms/wlan.md. A model, not a PHY: no rate adaptation, no
//! collisions, no retries, no per-station contention.
//!
//! Two queue links (the two directions of one topology link, e.g. an access
//! point's wlan queue and the stations' uplink queue) share ONE transmitter:
//! while a frame of either direction is on the air the other waits. When
//! both directions have frames, they take turns: under DCF every saturated
//! contender has the same chance to win each contention, so every station
//! gets an equal share of transmit opportunities in the long run (IEEE
//! 802.11-2012 §9.3.3, random backoff). The access point is one station;
//! the other direction stands for `stations` stations sharing one queue, so
//! it may send up to `stations` frames for each frame of the access point
//! (a weighted round robin: that share without the randomness, and without
//! collisions). `stations` = 1 is plain alternation.
//!
//! A frame occupies the medium for `overhead_ns + (size + header_bytes)·8 / rate`:
//! its bits plus the MAC header at the PHY rate, plus a fixed overhead per
//! frame for everything that is not the frame's bits (DIFS, mean backoff,
//! PLCP preamble and header, signal extension, SIFS, the MAC ACK). The
//! packet is handed on when this airtime ends.

/// 802.11g ERP-OFDM constants (IEEE 802.11-2012 Clause 19, Table 19-8, and
/// Clause 18 for the OFDM PLCP), short slot time (no 802.11b stations):
/// slot 9 µs, SIFS 10 µs, DIFS = SIFS + 2·slot = 28 µs, aCWmin = 15.
pub const SLOT_NS: u64 = 9_000;
pub const SIFS_NS: u64 = 10_000;
pub const DIFS_NS: u64 = SIFS_NS + 2 * SLOT_NS;
pub const CW_MIN: u64 = 15;
/// Mean first backoff: uniform over 0..=CWmin slots, so CWmin/2 slots (67.5 µs).
pub const MEAN_BACKOFF_NS: u64 = CW_MIN * SLOT_NS / 2;
/// PLCP preamble (16 µs) + SIGNAL field (4 µs) of an OFDM frame (§18.3.2).
pub const PLCP_NS: u64 = 20_000;
/// ERP-OFDM signal extension after every frame (§19.3.2.3).
pub const SIGNAL_EXTENSION_NS: u64 = 6_000;
/// MAC ACK (14 bytes) at 24 Mbit/s, the basic rate for 54 Mbit/s data:
/// 16 service + 112 + 6 tail bits = 134 bits in two 96-bit symbols of 4 µs,
/// after the PLCP, plus the signal extension: 20 + 8 + 6 = 34 µs.
pub const MAC_ACK_NS: u64 = PLCP_NS + 8_000 + SIGNAL_EXTENSION_NS;
/// DIFS + mean backoff + PLCP + signal extension + SIFS + MAC ACK = 165.5 µs.
pub const OVERHEAD_80211G_NS: u64 = DIFS_NS + MEAN_BACKOFF_NS + PLCP_NS + SIGNAL_EXTENSION_NS + SIFS_NS + MAC_ACK_NS;
/// MAC header (24) + FCS (4) + LLC/SNAP (8) bytes around an IP packet.
pub const HEADER_80211_BYTES: u32 = 36;

/// The model's throughput (IP bytes) of back-to-back frames of `size_bytes`.
pub fn frame_rate_bps(rate_bps: u64, size_bytes: u32, header_bytes: u32, overhead_ns: u64) -> u64 {
    let bits = size_bytes as f64 * 8.0;
    let air_s = overhead_ns as f64 / 1e9 + (size_bytes + header_bytes) as f64 * 8.0 / rate_bps as f64;
    (bits / air_s).round() as u64
}

/// One shared medium and its two directions.
#[derive(Debug, Clone)]
pub struct Medium {
    /// The two queue links that send on this medium.
    pub links: [u32; 2],
    pub overhead_ns: u64,
    pub header_bytes: u32,
    /// Which direction (0 or 1) is on the air, if any.
    pub busy: Option<u8>,
    /// Which direction goes first at the next contention.
    pub next: u8,
    /// Frames each direction may send in a row while the other waits: [1, stations].
    pub weights: [u32; 2],
    /// Frames `next` has sent in its current turn.
    run: u32,
}

impl Medium {
    pub fn new(links: [u32; 2], overhead_ns: u64, header_bytes: u32, stations: u32) -> Self {
        Medium { links, overhead_ns, header_bytes, busy: None, next: 0, weights: [1, stations.max(1)], run: 0 }
    }

    /// The direction (0 or 1) of link `l`.
    pub fn direction(&self, l: u32) -> u8 {
        u8::from(self.links[1] == l)
    }

    /// Directions in the order they contend now: the one that did not send last first.
    pub fn contention_order(&self) -> [u8; 2] {
        [self.next, 1 - self.next]
    }

    /// A frame of direction `d` finished: the medium is free. The direction
    /// whose turn it is keeps it until it has sent its weight in frames (a
    /// direction that sent because the other had nothing does not use up a turn).
    pub fn finish(&mut self, d: u8) {
        self.busy = None;
        if d == self.next {
            self.run += 1;
            if self.run >= self.weights[d as usize] {
                self.next = 1 - d;
                self.run = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_is_the_sum_of_the_standard_intervals() {
        // 28 + 67.5 + 20 + 6 + 10 + 34 µs
        assert_eq!(OVERHEAD_80211G_NS, 165_500);
    }

    #[test]
    fn model_airtime_of_an_mtu_frame_is_within_one_symbol_of_the_standard() {
        // Standard: 16 service + 8·1536 + 6 tail bits = 12 310 bits in
        // ceil(12 310 / 216) = 57 symbols of 4 µs = 228 µs at 54 Mbit/s.
        let standard_ns = DIFS_NS + MEAN_BACKOFF_NS + PLCP_NS + 228_000 + SIGNAL_EXTENSION_NS + SIFS_NS + MAC_ACK_NS;
        let model_ns = OVERHEAD_80211G_NS as f64 + 1536.0 * 8.0 / 54e6 * 1e9;
        assert!((model_ns - standard_ns as f64).abs() <= 4_000.0, "{model_ns} vs {standard_ns}");
    }

    #[test]
    fn two_backlogged_directions_alternate() {
        let mut m = Medium::new([3, 4], OVERHEAD_80211G_NS, HEADER_80211_BYTES, 1);
        assert_eq!(m.direction(4), 1);
        let mut sent = vec![];
        for _ in 0..4 {
            let d = m.contention_order()[0];
            sent.push(d);
            m.finish(d);
        }
        assert_eq!(sent, [0, 1, 0, 1]);
    }

    #[test]
    fn three_stations_send_three_frames_per_access_point_frame() {
        let mut m = Medium::new([3, 4], OVERHEAD_80211G_NS, HEADER_80211_BYTES, 3);
        let mut sent = vec![];
        for _ in 0..8 {
            let d = m.contention_order()[0];
            sent.push(d);
            m.finish(d);
        }
        assert_eq!(sent, [0, 1, 1, 1, 0, 1, 1, 1]);
        // Stations idle: the access point sends back to back; its turn is not used up.
        m.finish(1);
        assert_eq!(m.contention_order()[0], 0);
    }
}
