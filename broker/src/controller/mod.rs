//! The controller: the role ZooKeeper and Kafka's controller play together.

use crate::cli::ControllerArgs;

/// Run the controller process until it is killed.
pub fn run(args: ControllerArgs) -> Result<(), Box<dyn std::error::Error>> {
    Err(format!("controller on {}: not built yet", args.listen).into())
}
