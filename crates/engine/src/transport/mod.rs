//! Transports: TCP (sender + receiver), unresponsive datagram sources, and
//! QCN rate-limited sources (802.1Qau reaction points).
//!
//! Endpoints produce packets without routes; the world stamps the route of
//! the flow's direction and forwards them. Endpoints never see queues.

pub mod endpoint;
pub mod probe;
pub mod rate;
pub mod qcn_rp;
pub mod rate_source;
pub mod rtt;
pub mod scoreboard;
pub mod tcp_receiver;
pub mod tcp_sender;
pub mod udp;

use crate::packet::Ecn;
use crate::sim::units::serde_duration;
use crate::sim::NS_PER_MS;
use serde::{Deserialize, Serialize};

/// How a flow uses ECN (what it asks for in the SYN).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EcnSetting {
    /// Not ECN-capable.
    Off,
    /// RFC 3168: ECT(0), ECE latched until CWR.
    Classic,
    /// L4S (RFC 9331): ECT(1) with accurate per-packet CE feedback.
    L4s,
    /// Data-centre DCTCP (RFC 8257): ECT(0) with per-packet CE feedback.
    Dctcp,
}

impl EcnSetting {
    pub const NAMES: [&'static str; 4] = ["off", "classic", "l4s", "dctcp"];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "off" => Some(EcnSetting::Off),
            "classic" => Some(EcnSetting::Classic),
            "l4s" => Some(EcnSetting::L4s),
            "dctcp" => Some(EcnSetting::Dctcp),
            _ => None,
        }
    }

    /// The setting's name in a scenario (one of [`Self::NAMES`]).
    pub fn name(self) -> &'static str {
        match self {
            EcnSetting::Off => "off",
            EcnSetting::Classic => "classic",
            EcnSetting::L4s => "l4s",
            EcnSetting::Dctcp => "dctcp",
        }
    }

    /// The codepoint new data carries once ECN is negotiated.
    pub fn codepoint(self) -> Ecn {
        match self {
            EcnSetting::Off => Ecn::NotEct,
            EcnSetting::Classic | EcnSetting::Dctcp => Ecn::Ect0,
            EcnSetting::L4s => Ecn::Ect1,
        }
    }

    pub fn feedback(self) -> Feedback {
        match self {
            EcnSetting::Off => Feedback::None,
            EcnSetting::Classic => Feedback::Classic,
            EcnSetting::L4s | EcnSetting::Dctcp => Feedback::Accurate,
        }
    }
}

/// Negotiated ECN feedback between receiver and sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feedback {
    None,
    /// RFC 3168 §6.1.3: ECE set on every ACK from a CE arrival until a CWR.
    Classic,
    /// Per-packet: ECE mirrors the CE state with an immediate ACK on change
    /// (RFC 8257 §3.2) and every ACK carries a cumulative CE-packet count
    /// (AccECN, draft-ietf-tcpm-accurate-ecn §3.2, without its 3-bit wrap).
    Accurate,
}

/// TCP knobs shared by all flows of a scenario (overridable per flow group).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TcpConfig {
    /// IP packet size of a full data segment, headers included.
    pub mtu_bytes: u32,
    /// IP + TCP header bytes per segment (20 + 20 + 12 for timestamps).
    pub header_bytes: u32,
    /// Delayed ACKs (RFC 5681 §4.2): ACK every `delack_count` full segments or after `delack_timeout`.
    pub delayed_ack: bool,
    pub delack_count: u32,
    #[serde(rename = "delack_timeout", with = "serde_duration")]
    pub delack_timeout_ns: u64,
    #[serde(rename = "rto_min", with = "serde_duration")]
    pub rto_min_ns: u64,
    #[serde(rename = "rto_max", with = "serde_duration")]
    pub rto_max_ns: u64,
    #[serde(rename = "rto_initial", with = "serde_duration")]
    pub rto_initial_ns: u64,
    /// RFC 6675 DupThresh.
    pub dupthresh: u32,
    /// Pace at `pacing_ss_ratio`/`pacing_ca_ratio` × cwnd/srtt (Linux
    /// sch_fq-style internal pacing). Controllers with their own pacing
    /// rate (BBR) pace regardless.
    pub pacing: bool,
    pub pacing_ss_ratio: f64,
    pub pacing_ca_ratio: f64,
    /// Whether receivers accept ECN in the handshake.
    pub receiver_ecn: bool,
    /// Optional receive window cap (bytes); none by default.
    #[serde(rename = "rwnd", with = "crate::sim::units::serde_opt_size", skip_serializing_if = "Option::is_none")]
    pub rwnd_bytes: Option<u64>,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            // Ethernet MTU.
            mtu_bytes: 1500,
            // 20 B IPv4 + 20 B TCP + 12 B timestamp option (Linux default): MSS 1448.
            header_bytes: 52,
            // RFC 5681 §4.2 and Linux: delayed ACKs on, every second full segment.
            delayed_ack: true,
            delack_count: 2,
            // Linux TCP_DELACK_MIN = 40 ms (RFC 5681 allows up to 500 ms; ns-3 uses 200 ms).
            delack_timeout_ns: 40 * NS_PER_MS,
            // Linux TCP_RTO_MIN = 200 ms (RFC 6298 §2.4 says 1 s).
            rto_min_ns: 200 * NS_PER_MS,
            // Linux TCP_RTO_MAX = 120 s (RFC 6298 §2.5 allows a cap of at least 60 s).
            rto_max_ns: 120_000 * NS_PER_MS,
            // RFC 6298 §2.1: 1 s before the first RTT sample (also for the SYN).
            rto_initial_ns: 1_000 * NS_PER_MS,
            // RFC 6675 §2: DupThresh = 3.
            dupthresh: 3,
            pacing: false,
            // Linux sysctl tcp_pacing_ss_ratio = 200 %, tcp_pacing_ca_ratio = 120 %.
            pacing_ss_ratio: 2.0,
            pacing_ca_ratio: 1.2,
            receiver_ecn: true,
            rwnd_bytes: None,
        }
    }
}

impl TcpConfig {
    pub fn mss_bytes(&self) -> u32 {
        self.mtu_bytes - self.header_bytes
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.mtu_bytes < 68 || self.mtu_bytes > 65_535 {
            return Err(format!("mtu_bytes: must lie in 68..=65535 (got {})", self.mtu_bytes));
        }
        if self.header_bytes >= self.mtu_bytes {
            return Err("header_bytes: must be smaller than mtu_bytes".into());
        }
        if self.delack_count == 0 {
            return Err("delack_count: must be at least 1".into());
        }
        if self.dupthresh == 0 {
            return Err("dupthresh: must be at least 1".into());
        }
        if self.rto_min_ns == 0 || self.rto_min_ns > self.rto_max_ns {
            return Err("rto_min: must be positive and not above rto_max".into());
        }
        // A zero initial RTO would arm the SYN's retransmission timer for
        // "now" again and again: simulated time would never advance.
        if self.rto_initial_ns == 0 || self.rto_initial_ns > self.rto_max_ns {
            return Err(format!(
                "rto_initial: must be positive and not above rto_max ({}) (got {})",
                crate::sim::units::format_duration_ns(self.rto_max_ns),
                crate::sim::units::format_duration_ns(self.rto_initial_ns)
            ));
        }
        // The sender counts its window in whole segments: below one MSS
        // there is nothing to send (it used to be raised to one MSS silently).
        if let Some(rwnd) = self.rwnd_bytes {
            if rwnd < u64::from(self.mss_bytes()) {
                return Err(format!(
                    "rwnd: {rwnd}B is less than one segment; allowed: at least the MSS, {}B (mtu_bytes - header_bytes)",
                    self.mss_bytes()
                ));
            }
        }
        if !(self.pacing_ss_ratio > 0.0 && self.pacing_ca_ratio > 0.0) {
            return Err("pacing_ss_ratio/pacing_ca_ratio: must be positive".into());
        }
        Ok(())
    }
}

/// Bytes of a pure ACK carrying `sack_blocks` SACK blocks (RFC 2018 §3:
/// 2 + 8n option bytes, padded to 4).
#[inline]
pub fn ack_size_bytes(header_bytes: u32, sack_blocks: usize) -> u32 {
    if sack_blocks == 0 {
        header_bytes
    } else {
        header_bytes + (2 + 8 * sack_blocks as u32).div_ceil(4) * 4
    }
}

/// SYN / SYN-ACK size: headers plus MSS, SACK-permitted, window-scale options.
pub const SYN_BYTES: u32 = 64;

/// Payload bytes of segment `seq` for a flow of `total_bytes` (None: unbounded).
#[inline]
pub fn payload_of(seq: u64, mss: u32, total_bytes: Option<u64>) -> u32 {
    match total_bytes {
        Some(t) => {
            let start = seq * mss as u64;
            (t.saturating_sub(start)).min(mss as u64) as u32
        }
        None => mss,
    }
}

/// Segments needed for `total_bytes`.
#[inline]
pub fn segments_for(total_bytes: u64, mss: u32) -> u64 {
    total_bytes.div_ceil(mss as u64).max(1)
}
