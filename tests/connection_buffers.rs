//! The connections' buffers as a driver uses them (docs/PROTOCOL.md section 8): writing the
//! transmit queue in place (`pending_transmit` + `advance_transmit`) gives the same bytes as
//! taking it (`poll_transmit`), and receiving shared chunks (`receive_shared`) gives the same
//! events as receiving slices (`receive`), with payloads that point into the chunk.

use bytes::Bytes;
use pi_protocol::connection::{ClientEvent, CloseReason, ServerEvent};
use pi_protocol::{
    encode_client_message, ClientConnection, ClientHello, ClientMessage, ClientOptions, Payload, Request, RequestId,
    RpcTarget, ServerConnection, ServerId, ServerOptions, ServerTarget,
};
use proptest::prelude::*;
use serde_json::json;

const SERVER: &str = "3b241101-e2bb-4255-8caf-4136c566a962";

fn server() -> ServerConnection {
    ServerConnection::new(ServerId::new(SERVER).unwrap(), ServerOptions::default().invalid_call(None))
}

fn hello() -> Vec<u8> {
    encode_client_message(&ClientMessage::Hello(ClientHello::new(8u32))).unwrap()
}

fn request(n: usize) -> Vec<u8> {
    let call = Payload::from_value(&json!({"member": "echo", "args": [n, "a text long enough to be shared"]})).unwrap();
    let target = RpcTarget::Server(ServerTarget::new(ServerId::new(SERVER).unwrap()));
    encode_client_message(&ClientMessage::Request(Request::new(
        RequestId::new(format!("r-{n}")).unwrap(),
        target,
        call,
    )))
    .unwrap()
}

fn events(connection: &mut ServerConnection) -> Vec<ServerEvent> {
    std::iter::from_fn(|| connection.poll_event()).collect()
}

/// Feeds the hello and `count` requests, answers them all with their calls.
fn answer_requests(connection: &mut ServerConnection, first: usize, count: usize) {
    for n in first..first + count {
        connection.receive(&request(n));
    }
    for event in events(connection) {
        if let ServerEvent::Request(request) = event {
            connection.respond(&request.id, Ok(Some(request.call))).unwrap();
        }
    }
}

proptest! {
    #[test]
    fn writing_in_place_gives_the_bytes_of_poll_transmit(
        writes in proptest::collection::vec(1usize..200, 1..40),
        batches in proptest::collection::vec(1usize..6, 1..8),
    ) {
        // Two servers get the same input; one is drained with poll_transmit after each batch,
        // the other written in place in pieces of the sizes drawn, the pieces wrapping around.
        let (mut taken, mut in_place) = (server(), server());
        taken.receive(&hello());
        in_place.receive(&hello());
        let (mut expected, mut written) = (Vec::new(), Vec::new());
        let mut pieces = writes.iter().cycle();
        let mut first = 0;
        for count in batches {
            answer_requests(&mut taken, first, count);
            answer_requests(&mut in_place, first, count);
            first += count;
            expected.extend(taken.poll_transmit().unwrap_or_default());
            // Write part of the queue only: the rest waits for the next batch's frames.
            let piece = (*pieces.next().unwrap()).min(in_place.pending_transmit().len());
            written.extend_from_slice(&in_place.pending_transmit()[..piece]);
            in_place.advance_transmit(piece);
            prop_assert_eq!(in_place.pending_transmit_len(), in_place.pending_transmit().len());
        }
        while !in_place.pending_transmit().is_empty() {
            let piece = (*pieces.next().unwrap()).min(in_place.pending_transmit().len());
            written.extend_from_slice(&in_place.pending_transmit()[..piece]);
            in_place.advance_transmit(piece);
        }
        prop_assert_eq!(written, expected);
        prop_assert_eq!(in_place.poll_transmit(), None);
    }

    #[test]
    fn receive_shared_gives_the_events_of_receive(cuts in proptest::collection::vec(1usize..300, 1..30)) {
        let mut stream = hello();
        for n in 0..12 {
            stream.extend(request(n));
        }
        stream.extend_from_slice(&[0, 0, 0, 9, 0xa0]); // a frame cut short: a violation at the end
        let (mut sliced, mut shared) = (server(), server());
        let mut rest = &stream[..];
        for cut in cuts.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (chunk, tail) = rest.split_at((*cut).min(rest.len()));
            sliced.receive(chunk);
            shared.receive_shared(&Bytes::copy_from_slice(chunk));
            rest = tail;
        }
        sliced.disconnect();
        shared.disconnect();
        let expected = events(&mut sliced);
        // Ready, the twelve requests, then the cut frame (the requests are in flight: no Closed).
        prop_assert_eq!(expected.len(), 1 + 12 + 1);
        prop_assert!(
            matches!(&expected[13], ServerEvent::Closing { reason: CloseReason::Violation(_) }),
            "{:?}",
            expected[13]
        );
        prop_assert_eq!(events(&mut shared), expected);
        prop_assert_eq!(shared.poll_transmit(), sliced.poll_transmit());
    }
}

#[test]
fn receive_shared_payloads_point_into_the_chunk() {
    let mut stream = hello();
    stream.extend(request(1));
    let chunk = Bytes::from(stream);
    let mut connection = server();
    connection.receive_shared(&chunk);
    let events = events(&mut connection);
    let ServerEvent::Request(request) = &events[1] else { panic!("{events:?}") };
    let call = request.call.as_cbor();
    assert!(call.len() > 46, "a payload the decoder shares rather than copies");
    let range = chunk.as_ptr() as usize..chunk.as_ptr() as usize + chunk.len();
    assert!(range.contains(&(call.as_ptr() as usize)), "the call is a slice of the chunk");
}

#[test]
fn the_client_writes_in_place_too() {
    let mut client = ClientConnection::new(ClientOptions::default());
    let hello = client.pending_transmit().to_vec();
    assert_eq!(hello, self::hello());
    client.advance_transmit(5);
    assert_eq!(client.pending_transmit(), &hello[5..]);
    assert_eq!(client.poll_transmit(), Some(hello[5..].to_vec()), "poll_transmit takes what is left");
    assert!(client.pending_transmit().is_empty());
    client.close();
    assert!(matches!(client.poll_event(), Some(ClientEvent::Closed { .. })));
}

#[test]
#[should_panic(expected = "advanced past the queued bytes")]
fn advancing_past_the_queue_panics() {
    let mut client = ClientConnection::new(ClientOptions::default());
    let len = client.pending_transmit().len();
    client.advance_transmit(len + 1);
}
