//! A tiny in-process server for the documentation's runnable examples (not part of the API):
//! `pi.session-management` `attach [sessionId]` (Sessions `session-1` and `session-2`, others
//! `session_not_found`) and `detach []`, `demo.echo` `echo(...args)` answering `{"echo": args}`,
//! `$chord.service` `catalogue` naming `demo.echo`, every Session call answered `{"ok": true}`,
//! anything else `not_found`.

use crate::connection::{ServerEvent, ServerOptions};
use crate::io::ServerDriver;
use crate::{
    AttachmentId, ErrorBody, ErrorCode, Payload, RpcTarget, ServerConnection, ServerId, SessionId, SessionTarget,
};

fn error(code: &str, message: &str) -> ErrorBody {
    ErrorBody::new(ErrorCode::new(code).expect("a non-empty code"), message)
}

/// Serves every connection accepted on `listener` (see [`serve`]).
#[cfg(unix)]
pub async fn serve_unix(listener: tokio::net::UnixListener, server_id: ServerId) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(serve(stream, server_id.clone()));
    }
}

/// Serves one connection over `io` until the client goes away.
pub async fn serve<IO>(io: IO, server_id: ServerId)
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut driver = ServerDriver::new(io, ServerConnection::new(server_id.clone(), ServerOptions::default()));
    let mut attachments = 0u64;
    while let Some(event) = driver.next_event().await {
        let ServerEvent::Request(request) = event else { continue };
        let call = request.call.to_value();
        let (service, member) = (call["serviceId"].as_str().unwrap_or(""), call["member"].as_str().unwrap_or(""));
        let args = call["args"].clone();
        let connection = driver.connection_mut();
        let answer = match (&request.target, service, member) {
            (RpcTarget::Session(_), _, _) => Ok(Some(serde_json::json!({"ok": true}))),
            (_, "pi.session-management", "attach") => match args[0].as_str() {
                Some(session @ ("session-1" | "session-2")) => {
                    attachments += 1;
                    let route = SessionTarget::new(
                        server_id.clone(),
                        SessionId::new(session).expect("a session id"),
                        AttachmentId::new(format!("attachment-{attachments}")).expect("an attachment id"),
                    );
                    let _ = connection.set_attachment(Some(route));
                    Ok(None)
                }
                _ => Err(error("session_not_found", "No such session")),
            },
            (_, "pi.session-management", "detach") => {
                let _ = connection.set_attachment(None);
                Ok(None)
            }
            (_, "demo.echo", "echo") => Ok(Some(serde_json::json!({"echo": args}))),
            (_, "$chord.service", "catalogue") => {
                Ok(Some(serde_json::json!([{"serviceId": "demo.echo", "mode": "singleton"}])))
            }
            _ => Err(error("not_found", "No such service member")),
        };
        let answer = answer.map(|value| value.map(|value| Payload::from_value(&value).expect("a JSON payload")));
        let _ = connection.respond(&request.id, answer);
    }
}
