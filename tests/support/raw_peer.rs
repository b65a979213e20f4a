//! A raw Pi client for the server tests: writes client messages, reads server messages as JSON.

use pi_protocol::{encode_client_message, ClientHello, ClientMessage, Payload, Request, RequestId, RpcTarget};
use pi_protocol::{ServerMessageDecoder, ServerTarget};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

pub const SERVER: &str = "3b241101-e2bb-4255-8caf-4136c566a962";

pub fn server_id() -> pi_protocol::ServerId {
    pi_protocol::ServerId::new(SERVER).unwrap()
}

pub struct Peer<S> {
    pub stream: S,
    decoder: ServerMessageDecoder,
    pending: std::collections::VecDeque<Value>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Peer<S> {
    pub fn new(stream: S) -> Self {
        Peer { stream, decoder: ServerMessageDecoder::new(), pending: Default::default() }
    }

    pub async fn send(&mut self, message: ClientMessage) {
        self.stream.write_all(&encode_client_message(&message).unwrap()).await.unwrap();
    }

    pub async fn hello(&mut self) -> Value {
        self.send(ClientMessage::Hello(ClientHello::new(8u32))).await;
        self.next().await.expect("a hello")
    }

    pub async fn request_to(&mut self, id: &str, target: RpcTarget, call: Value) {
        let call = Payload::from_value(&call).unwrap();
        self.send(ClientMessage::Request(Request::new(RequestId::new(id).unwrap(), target, call))).await;
    }

    pub async fn call(&mut self, id: &str, service: &str, member: &str, args: Value) {
        let target = RpcTarget::Server(ServerTarget::new(server_id()));
        self.request_to(id, target, json!({"serviceId": service, "member": member, "args": args})).await;
    }

    /// The next server message as JSON, or `None` at the end of the stream.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(message) = self.pending.pop_front() {
                return Some(message);
            }
            let mut buf = vec![0u8; 64 * 1024];
            let n = self.stream.read(&mut buf).await.ok()?;
            if n == 0 {
                return None;
            }
            for message in self.decoder.push(&buf[..n]) {
                self.pending.push_back(message.unwrap().to_json());
            }
        }
    }
}
