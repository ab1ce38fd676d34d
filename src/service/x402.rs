//! The autonomous rail `x402_usdc_base`: per-query USDC over HTTP 402.

use crate::config::X402Settings;

/// USDC on one network: what the `exact` EVM scheme needs to name the token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usdc {
    /// CAIP-2 id (x402 v2).
    pub network: &'static str,
    /// The network's name in x402 v1.
    pub v1_network: &'static str,
    /// The token contract.
    pub asset: &'static str,
    /// The token's EIP-712 domain name and version (`extra` of a requirement).
    pub eip712_name: &'static str,
    pub eip712_version: &'static str,
}

/// USDC has 6 decimals: one cent is 10,000 atomic units.
pub const ATOMIC_PER_CENT: i64 = 10_000;

/// The networks this rail can use (the EIP-712 names differ between mainnet and Sepolia).
pub const NETWORKS: &[Usdc] = &[
    Usdc {
        network: "eip155:8453",
        v1_network: "base",
        asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        eip712_name: "USD Coin",
        eip712_version: "2",
    },
    Usdc {
        network: "eip155:84532",
        v1_network: "base-sepolia",
        asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
        eip712_name: "USDC",
        eip712_version: "2",
    },
];

/// USDC on `network`, if this rail knows it.
pub fn usdc(network: &str) -> Option<&'static Usdc> {
    NETWORKS.iter().find(|u| u.network == network)
}

/// Refuses settings the rail cannot use.
///
/// # Errors
/// A message naming the bad flag.
pub fn check_settings(settings: &X402Settings) -> Result<(), String> {
    let address = settings.pay_to.strip_prefix("0x").unwrap_or("");
    if address.len() != 40 || !address.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("--x402-pay-to must be an EVM address: 0x and 40 hex digits".into());
    }
    if usdc(&settings.network).is_none() {
        let known: Vec<&str> = NETWORKS.iter().map(|u| u.network).collect();
        return Err(format!(
            "--x402-network {} is not supported; use one of {}",
            settings.network,
            known.join(", ")
        ));
    }
    Ok(())
}
