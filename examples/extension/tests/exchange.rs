//! The extended protocol over loopback TCP, through the facade's generic tokio codec named with
//! this crate's messages: a server and a client exchange version 8 messages and this crate's
//! `report` / `report_ack`; a version 8 peer (the facade's own types and codecs) decodes every
//! version 8 message this crate sends, this crate decodes what the version 8 peer answers, and
//! the version 8 peer refuses a `report`.

use futures_util::{SinkExt, StreamExt};
use pi_metrics_extension::metrics::{
    ClientHello, Request, RequestId, Response, RpcTarget, ServerHello, ServerId, ServerTarget, SuccessResponse,
};
use pi_metrics_extension::{
    ClientCodec, ClientMessage, MetricName, Origin, Report, ReportAck, ServerCodec, ServerMessage, Unit,
};
use pi_protocol::{ErrorKind, Integer, Number, Payload, Record};
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::{Framed, FramedRead};

const SERVER_ID: &str = "3b241101-e2bb-4255-8caf-4136c566a962";

type Failure = Box<dyn std::error::Error + Send + Sync>;

fn hello() -> ClientMessage {
    ClientMessage::from(ClientHello::new(Integer::from(8u8)))
}

fn request() -> ClientMessage {
    let call = Payload::from_value(&json!({"serviceId": "$chord.service", "member": "catalogue", "args": []})).unwrap();
    let target = RpcTarget::Server(ServerTarget::new(ServerId::new(SERVER_ID).unwrap()));
    ClientMessage::from(Request::new(RequestId::new("req-1").unwrap(), target, call))
}

fn report() -> Report {
    let number = |value: f64| Number::new(value).unwrap();
    let labels: Record<String> =
        [("region", "eu-west".to_owned()), ("build", "1.2.3".to_owned())].into_iter().collect();
    Report::new(
        MetricName::new("latency.p50").unwrap(),
        number(12.5),
        vec![number(11.0), number(12.0), number(14.5)],
        Unit::Ms,
        labels,
    )
    .with_origin(Origin::new("node-7").with_pid(Integer::from(4242u16)))
}

/// Listens on a free loopback port.
async fn listen() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    (listener, address)
}

/// The extended server: answers `hello`, acknowledges `report`s with their sample count and
/// echoes the call of a `request`; returns what it received once the client has gone.
async fn serve(listener: TcpListener) -> Result<Vec<ClientMessage>, Failure> {
    let (socket, _) = listener.accept().await?;
    let mut framed = Framed::new(socket, ServerCodec::new());
    let mut received = Vec::new();
    while let Some(message) = framed.next().await {
        let message = message?;
        let answer = match &message {
            ClientMessage::Hello(_) => ServerMessage::from(ServerHello::new(ServerId::new(SERVER_ID)?)),
            ClientMessage::Report(report) => {
                let accepted = Integer::try_from(report.samples.len() as u64)?;
                ServerMessage::from(ReportAck::new(report.name.clone(), accepted))
            }
            ClientMessage::Request(request) => ServerMessage::Response(Response::Success(
                SuccessResponse::new(request.id.clone()).with_result(request.call.clone()),
            )),
            _ => continue,
        };
        framed.send(answer).await?;
        received.push(message);
    }
    Ok(received)
}

#[tokio::test]
async fn extended_and_version_8_messages_cross_loopback() -> Result<(), Failure> {
    let (listener, address) = listen().await;
    let server = tokio::spawn(serve(listener));

    let mut client = Framed::new(TcpStream::connect(&address).await?, ClientCodec::new());
    client.send(hello()).await?;
    assert!(
        matches!(client.next().await.transpose()?, Some(ServerMessage::Hello(h)) if h.server_id.as_str() == SERVER_ID)
    );

    // Two messages in one write: `feed`, then a plain `flush` (no item type to name).
    client.feed(ClientMessage::from(report())).await?;
    client.feed(request()).await?;
    client.flush().await?;
    let Some(ServerMessage::ReportAck(ack)) = client.next().await.transpose()? else { panic!("a report_ack") };
    assert_eq!((ack.name.as_str(), ack.accepted.get()), ("latency.p50", 3));
    let Some(ServerMessage::Response(Response::Success(response))) = client.next().await.transpose()? else {
        panic!("a response")
    };
    let ClientMessage::Request(sent) = request() else { unreachable!() };
    assert_eq!((&response.id, response.result.as_ref()), (&sent.id, Some(&sent.call)));

    client.close().await?;
    assert_eq!(server.await??, vec![hello(), ClientMessage::from(report()), request()]);
    Ok(())
}

#[tokio::test]
async fn a_malformed_report_is_refused_with_its_path_and_rule() -> Result<(), Failure> {
    let (listener, address) = listen().await;
    let server = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        FramedRead::new(socket, ServerCodec::new()).collect::<Vec<_>>().await
    });
    // A `report` whose unit is not one of the enumeration's, written as raw bytes (the typed
    // encoder cannot produce it), after a good `hello`.
    let mut bad = report().to_json();
    bad["unit"] = json!("minutes");
    let options = pi_protocol::CodecOptions::default();
    let hello_frame = pi_protocol::encode_message(&hello(), &options)?;
    let bad_frame = pi_protocol::runtime::json::encode_json_frame(&bad, &options, |_, _| Ok(()))?;
    let mut socket = TcpStream::connect(&address).await?;
    socket.write_all(&[hello_frame.clone(), bad_frame].concat()).await?;
    socket.shutdown().await?;

    let results = server.await?;
    assert_eq!(results.len(), 2, "the message, then the error; the stream ends there");
    assert_eq!(results[0].as_ref().ok(), Some(&hello()));
    let error = results[1].as_ref().unwrap_err().protocol().expect("a protocol error");
    assert_eq!(
        (error.kind(), error.rule(), error.path_string()),
        (ErrorKind::Schema, pi_protocol::Rule::NotInEnum, "unit".into())
    );
    assert_eq!(error.offset(), Some(hello_frame.len() as u64));
    Ok(())
}

#[tokio::test]
async fn a_version_8_peer_decodes_the_version_8_messages_and_refuses_a_report() -> Result<(), Failure> {
    let (listener, address) = listen().await;
    // The version 8 server: the facade's codec and types, which know nothing of this crate.
    let server = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        let mut framed = Framed::new(socket, pi_protocol::io::ServerCodec::new());
        let mut received = Vec::new();
        while let Some(message) = framed.next().await {
            match &message {
                Ok(pi_protocol::ClientMessage::Hello(_)) => {
                    let id = pi_protocol::ServerId::new(SERVER_ID).unwrap();
                    framed.send(pi_protocol::ServerMessage::from(pi_protocol::ServerHello::new(id))).await.unwrap();
                }
                Ok(pi_protocol::ClientMessage::Request(request)) => {
                    let success = pi_protocol::SuccessResponse::new(request.id.clone()).with_result(Payload::null());
                    let answer = pi_protocol::ServerMessage::Response(pi_protocol::Response::Success(success));
                    framed.send(answer).await.unwrap();
                }
                _ => {}
            }
            received.push(message.map_err(|e| e.protocol().cloned()));
        }
        received
    });

    let mut client = Framed::new(TcpStream::connect(&address).await?, ClientCodec::new());
    client.send(hello()).await?;
    let Some(ServerMessage::Hello(answer)) = client.next().await.transpose()? else { panic!("a hello") };
    assert_eq!(answer.server_id.as_str(), SERVER_ID);
    client.send(request()).await?;
    let Some(ServerMessage::Response(Response::Success(answer))) = client.next().await.transpose()? else {
        panic!("a response")
    };
    assert_eq!((answer.id.as_str(), answer.result.as_ref().map(Payload::to_value)), ("req-1", Some(json!(null))));
    client.send(ClientMessage::from(report())).await?;
    client.close().await?;

    let received = server.await?;
    assert_eq!(received.len(), 3);
    // The same messages as the facade's own types, field for field (compared as JSON, since
    // the two crates' types are distinct Rust types with one wire form).
    for (got, sent) in received.iter().zip([hello(), request()]) {
        assert_eq!(got.as_ref().map(pi_protocol::ClientMessage::to_json).ok(), Some(sent.to_json()));
    }
    let refused = received[2].as_ref().unwrap_err().as_ref().expect("a protocol error");
    assert_eq!((refused.kind(), refused.path_string()), (ErrorKind::Schema, "type".into()), "{refused}");
    Ok(())
}
