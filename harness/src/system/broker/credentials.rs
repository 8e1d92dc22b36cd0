//! The credentials of one cluster: a cluster id and a secret every process of it is
//! given (`--cluster-id`, `--secret-file`), so the brokers can refuse internal
//! requests from anything outside the run (docs/api.md, "Internal requests").

use std::path::{Path, PathBuf};

use crate::error::Result;

/// The credentials every process of one cluster shares (`--cluster-id`,
/// `--secret-file`): the brokers refuse internal requests without them, so nothing
/// outside this run — a process of another run that reused a port, say — can act on
/// it. Fresh for every cluster; the secret comes from the OS (it decides nothing in
/// the run, so the seed need not make it).
#[derive(Debug, Clone)]
pub struct Credentials {
    pub cluster_id: String,
    pub secret: String,
    /// `root/cluster-secret` (mode 0600), read by the brokers.
    pub secret_file: PathBuf,
}

impl Credentials {
    /// New credentials, the secret written to `root/cluster-secret`.
    pub(super) fn generate(root: &Path) -> Result<Credentials> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::create_dir_all(root)?;
        let cluster_id = format!("watermark-{:016x}", rand::random::<u64>());
        let secret = format!("{:032x}", rand::random::<u128>());
        let secret_file = root.join("cluster-secret");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&secret_file)?;
        writeln!(f, "{secret}")?;
        Ok(Credentials {
            cluster_id,
            secret,
            secret_file,
        })
    }
}
