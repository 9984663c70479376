//! `applyset ui`'s flags.

use clap::Args;

use super::ClusterArgs;

/// `applyset ui`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  # Every ApplySet the current context may list, at http://127.0.0.1:9099/
  applyset ui

  # Another port, and the namespace to show when the identity may not list every namespace
  applyset ui --address 127.0.0.1:8000 -n team-a

  # Served to the network: every request must carry the access token printed at start
  applyset ui --address 0.0.0.0:9099 --allow-remote-access

Like `kubectl proxy`, the server acts with your kubeconfig identity: anyone who can reach it can
do what you can. A non-loopback --address is refused unless --allow-remote-access is given; the
token then guards it, but the traffic is plain HTTP: put a TLS reverse proxy in front.")]
pub struct UiArgs {
    /// The address to listen on (`HOST:PORT`; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:9099", value_name = "ADDR")]
    pub address: String,
    /// Serve a non-loopback `--address`: every request must then carry a random access token,
    /// printed once at start in the URL to open (then kept in a `Secure`, `HttpOnly`,
    /// `SameSite=Strict` cookie). Without it, such an address is refused.
    #[arg(long)]
    pub allow_remote_access: bool,
    /// Host names the server answers to, as `kubectl proxy --accept-hosts`: comma-separated
    /// regular expressions matched against the request's Host without its port (any other is
    /// refused, which stops a DNS-rebinding page from reading through your identity). Default:
    /// `^localhost$,^127\.0\.0\.1$,^\[::1\]$`; with `--allow-remote-access`, any host.
    #[arg(long, value_name = "REGEXES")]
    pub accept_hosts: Option<String>,
    /// The namespace shown when the identity may not list ApplySets of every namespace
    /// (default: the kubeconfig context's namespace, else `default`).
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}
