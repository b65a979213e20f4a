//! Constructors for the messages applications build most often, on top of the generated
//! `new` and `with_*` ones: an error from a code and a message, a response from a result.

use crate::{ErrorBody, ErrorCode, ErrorResponse, Payload, ProtocolError, RequestId, Response, SuccessResponse};

impl ErrorBody {
    /// An error with `code` (opaque to the protocol, any non-empty string: docs/PROTOCOL.md
    /// section 4) and a human-readable `message`.
    ///
    /// ```
    /// use pi_protocol::ErrorBody;
    /// let error = ErrorBody::from_code("not_found", "No such session")?;
    /// assert_eq!((error.code.as_str(), error.message.as_str()), ("not_found", "No such session"));
    /// assert!(ErrorBody::from_code("", "empty codes are refused").is_err());
    /// # Ok::<(), pi_protocol::ProtocolError>(())
    /// ```
    ///
    /// # Errors
    /// A Schema error when `code` is empty.
    pub fn from_code(code: &str, message: impl Into<String>) -> Result<Self, ProtocolError> {
        Ok(ErrorBody::new(ErrorCode::new(code)?, message))
    }
}

impl Response {
    /// The response that settles request `id` with `ok: true`, carrying `result` when it is
    /// `Some` (no `result` key otherwise).
    ///
    /// ```
    /// use pi_protocol::{Payload, RequestId, Response};
    /// let response = Response::success(RequestId::new("req-1")?, Some(Payload::from_value(&serde_json::json!(42))?));
    /// assert_eq!(response.to_json()["result"], 42);
    /// assert!(Response::success(RequestId::new("req-2")?, None).to_json().get("result").is_none());
    /// # Ok::<(), pi_protocol::ProtocolError>(())
    /// ```
    #[must_use]
    pub fn success(id: RequestId, result: Option<Payload>) -> Self {
        let response = SuccessResponse::new(id);
        Response::Success(match result {
            Some(result) => response.with_result(result),
            None => response,
        })
    }

    /// The response that settles request `id` with `ok: false` and `error`.
    ///
    /// ```
    /// use pi_protocol::{ErrorBody, RequestId, Response};
    /// let response = Response::failure(RequestId::new("req-1")?, ErrorBody::from_code("busy", "Try again")?);
    /// assert_eq!(response.to_json()["error"]["code"], "busy");
    /// # Ok::<(), pi_protocol::ProtocolError>(())
    /// ```
    #[must_use]
    pub fn failure(id: RequestId, error: ErrorBody) -> Self {
        Response::Failure(ErrorResponse::new(id, error))
    }
}
