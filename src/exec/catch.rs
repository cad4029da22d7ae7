//! Running handler code with its panics caught, without `unsafe` and without the `futures`
//! crate.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::handler::BoxFuture;

/// Polls a boxed future, turning a panic in any poll into `Err(message)`. The future is boxed,
/// hence `Unpin`, so polling it through `&mut` needs no pin projection.
struct CatchUnwind<T> {
    future: BoxFuture<T>,
}

impl<T> Future for CatchUnwind<T> {
    type Output = Result<T, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = &mut self.future;
        // The future is dropped right after a panic (our caller never polls it again), so no
        // broken state it may hold can be observed: asserting unwind safety is sound.
        match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(panic_message(payload.as_ref()))),
        }
    }
}

/// Calls `start` (which builds the handler's future; user code may panic there too) and runs
/// the future, catching a panic in either. `Err` holds the panic's message.
pub(crate) async fn guarded<T>(start: impl FnOnce() -> BoxFuture<T>) -> Result<T, String> {
    let future = catch_unwind(AssertUnwindSafe(start)).map_err(|p| panic_message(p.as_ref()))?;
    CatchUnwind { future }.await
}

/// The message of a panic payload: `panic!` gives a `&str` or a `String`.
fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<T>(future: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(future)
    }

    #[test]
    fn a_panic_while_polling_becomes_its_message() {
        let out = block_on(guarded(|| -> BoxFuture<u8> {
            Box::pin(async { panic!("boom {}", 1) })
        }));
        assert_eq!(out, Err("boom 1".to_string()));
    }

    #[test]
    fn a_panic_while_starting_becomes_its_message() {
        let out = block_on(guarded(|| -> BoxFuture<u8> { panic!("early") }));
        assert_eq!(out, Err("early".to_string()));
    }

    #[test]
    fn a_pending_future_is_polled_to_completion() {
        let out = block_on(guarded(|| -> BoxFuture<u8> {
            Box::pin(async {
                tokio::task::yield_now().await;
                7
            })
        }));
        assert_eq!(out, Ok(7));
    }

    #[test]
    fn a_non_string_payload_is_named() {
        let out = block_on(guarded(|| -> BoxFuture<u8> {
            Box::pin(async { std::panic::panic_any(42_u32) })
        }));
        assert_eq!(out, Err("a panic with a non-string payload".to_string()));
    }
}
