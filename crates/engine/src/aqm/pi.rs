//! The PI controller's parameter set, written once for PIE, PI2 and DualPI2:
//! the target queue delay, the update period and the integral (alpha) and
//! proportional (beta) gains of RFC 8033 §4.2 and RFC 9332 Appendix A.1
//! (`p += alpha*(qdelay - target) + beta*(qdelay - qdelay_old)` every
//! tupdate). PI2's config holds plain values; PIE and DualPI2 hold overrides
//! of their preset's or variant's values ([`pi_config`]). All three check
//! them with [`check_pi_gains`], so the keys and error texts agree.

/// Defines a config struct with PIE's and DualPI2's overrides of the PI
/// parameters spliced in where `@target_tupdate` and `@alpha_beta` stand
/// (PIE keeps `max_burst` between them; the keys' order is the order of the
/// "allowed" list in unknown-key errors). Each is `None` until set, meaning
/// the preset's (PIE) or variant's (DualPI2) value, and is left out of the
/// normalised parameters then. The fields stay flat (`cfg.target_ns`) and
/// inside serde's strict key list; a nested struct behind `#[serde(flatten)]`
/// would be read as a map, and its errors would lose their key path and the
/// list of allowed keys.
macro_rules! pi_config {
    (
        $(#[$attr:meta])*
        pub struct $name:ident {
            $($(#[$a1:meta])* pub $f1:ident: $t1:ty,)*
            @target_tupdate
            $($(#[$a2:meta])* pub $f2:ident: $t2:ty,)*
            @alpha_beta
            $($(#[$a3:meta])* pub $f3:ident: $t3:ty,)*
        }
    ) => {
        $(#[$attr])*
        pub struct $name {
            $($(#[$a1])* pub $f1: $t1,)*
            /// Target queue delay (PIE's QDELAY_REF); None = the preset's or variant's value.
            #[serde(rename = "target", with = "crate::sim::units::serde_opt_duration", skip_serializing_if = "Option::is_none")]
            pub target_ns: Option<u64>,
            /// Update period of the controller (T_UPDATE); None = the preset's or variant's value.
            #[serde(rename = "tupdate", with = "crate::sim::units::serde_opt_duration", skip_serializing_if = "Option::is_none")]
            pub tupdate_ns: Option<u64>,
            $($(#[$a2])* pub $f2: $t2,)*
            /// Integral gain in Hz; None = the preset's or variant's value.
            #[serde(skip_serializing_if = "Option::is_none")]
            pub alpha: Option<f64>,
            /// Proportional gain in Hz; None = the preset's or variant's value.
            #[serde(skip_serializing_if = "Option::is_none")]
            pub beta: Option<f64>,
            $($(#[$a3])* pub $f3: $t3,)*
        }
    };
}
pub(crate) use pi_config;

/// Check the PI parameters a controller will run with (after any preset
/// filled them in); the errors name the user's keys.
pub fn check_pi_gains(target_ns: u64, tupdate_ns: u64, alpha: f64, beta: f64) -> Result<(), String> {
    if target_ns == 0 {
        return Err("target: must be positive".into());
    }
    if tupdate_ns == 0 {
        return Err("tupdate: must be positive".into());
    }
    if !(alpha.is_finite() && alpha >= 0.0) {
        return Err("alpha: must be a non-negative number (Hz)".into());
    }
    if !(beta.is_finite() && beta >= 0.0) {
        return Err("beta: must be a non-negative number (Hz)".into());
    }
    Ok(())
}
