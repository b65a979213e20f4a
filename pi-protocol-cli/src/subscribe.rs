//! `subscribe SERVICE`: follow a Chord service of a live server, printing its state members'
//! whole values, first from the snapshot, then after each update.

use clap::{Args, ValueEnum};
use pi_protocol::chord::subscription::Applied;
use pi_protocol::chord::wire::ServiceMode;
use pi_protocol::client::ServiceUpdateError;

use crate::remote::{block_on, print_line, request_failure, ConnectArgs, Interrupt};
use crate::Failure;

/// A Chord service mode.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// One instance, no address.
    Singleton,
    /// Instances by key, each with an address {key, generation}.
    Keyed,
}

#[derive(Args, Debug)]
pub struct SubscribeArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// The service (serviceId) to follow, for example demo.counter.
    #[arg(value_name = "SERVICE")]
    service: String,
    /// The mode the service has.
    #[arg(long, value_enum, default_value_t = Mode::Singleton)]
    mode: Mode,
    /// Stop after N updates [default: follow until the connection ends].
    #[arg(long, value_name = "N")]
    updates: Option<u64>,
}

/// Prints the snapshot's state members, then one line per state member an update changed:
/// `{"member", "instance", "sequence", "value"}`, `value` the member's whole value. Ctrl-C
/// unsubscribes and ends the run successfully.
pub fn subscribe(args: &SubscribeArgs) -> Result<(), Failure> {
    block_on(async {
        let mut interrupt = Interrupt::watch();
        let (client, target) = args.connect.connect().await?;
        let mode = match args.mode {
            Mode::Singleton => ServiceMode::Singleton,
            Mode::Keyed => ServiceMode::Keyed,
        };
        let mut subscription = client
            .subscribe_service(target, &args.service, mode)
            .await
            .map_err(|error| request_failure(&format!("subscribe {}", args.service), &error))?;
        for state in subscription.states() {
            print_line(&state.to_json())?;
        }
        if subscription.states().is_empty() {
            eprintln!(
                "pi-protocol: the snapshot of {} has no state members: waiting for updates (Ctrl-C to stop)",
                args.service
            );
        }
        let mut seen = 0;
        while args.updates.is_none_or(|n| seen < n) {
            let next = tokio::select! {
                next = subscription.next() => next,
                () = interrupt.recv() => break,
            };
            let applied = match next {
                Some(Ok(applied)) => applied,
                Some(Err(ServiceUpdateError::Updates(error))) => {
                    return Err(Failure::usage(format!("the subscription ended: {error}")))
                }
                Some(Err(error)) => return Err(Failure::input(error.to_string())),
                None => break,
            };
            seen += 1;
            match applied.applied {
                Applied::State(change) => print_line(&change.to_json())?,
                Applied::Replaced(states) | Applied::Spawned { states, .. } => {
                    states.iter().try_for_each(|state| print_line(&state.to_json()))?
                }
                _ => print_line(&applied.update.to_payload().map(|p| p.to_value()).unwrap_or_default())?,
            }
        }
        let _ = subscription.unsubscribe().await;
        client.disconnect().await;
        Ok(())
    })
}
