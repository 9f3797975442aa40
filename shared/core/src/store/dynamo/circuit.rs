//! The circuit breaker's writes on a destination's state item ([`crate::outbox::breaker`]):
//! counts by `ADD` (conditional on the window's slot holding the attempt's bucket, so that a
//! rolled-over slot is never added to and no concurrent count is lost; a slot that holds an older
//! bucket is rolled over by a `SET` conditional on that, tried first when the worker read it so),
//! moves and probe claims by conditional `UpdateItem`s.

use super::{classify, DynamoTable};
use crate::clock::Millis;
use crate::outbox::breaker::window::slot_of;
use crate::outbox::breaker::{Change, Circuit, Move};
use crate::outbox::destination::DestinationId;
use crate::outbox::schema::*;
use crate::store::attr::{n, s};
use crate::store::circuit::worker_state;
use crate::store::schema::{KIND, PK, SK};
use crate::store::StoreError;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::ReturnValue;

/// How a count meets the window's slot.
#[derive(Clone, Copy)]
enum Slot {
    /// `ADD` to it, if it holds the bucket.
    Add,
    /// Roll it over to the bucket, if it holds an older one (or none).
    Roll,
    /// `ADD` to whatever it holds (a newer bucket).
    Force,
}

/// `Ok(None)` for a failed condition.
fn applied<T, R>(result: Result<T, SdkError<UpdateItemError, R>>) -> Result<Option<T>, StoreError>
where
    R: std::fmt::Debug + Send + Sync + 'static,
{
    match result {
        Ok(out) => Ok(Some(out)),
        Err(SdkError::ServiceError(se))
            if matches!(
                se.err(),
                UpdateItemError::ConditionalCheckFailedException(_)
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(classify(e)),
    }
}

impl DynamoTable {
    fn circuit_update(&self, destination: &DestinationId) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .key(PK, s(destination_pk(destination.as_str())))
            .key(SK, s(STATE_SK))
            .expression_attribute_names("#kind", KIND)
            .expression_attribute_values(":kind", s(KIND_DESTINATION_STATE))
    }

    fn count_update(
        &self,
        destination: &DestinationId,
        (up, probe, bucket): (bool, bool, i64),
        slot: Slot,
        reopen: Option<i64>,
        now: Millis,
    ) -> UpdateItemFluentBuilder {
        let [at, requests, failures] = WINDOW_SLOTS[slot_of(bucket)];
        let mut set = vec!["#kind = :kind"];
        let mut add = vec![];
        let mut remove = vec![];
        match slot {
            Slot::Add | Slot::Force => add.extend(["#wn :one", "#wf :fail"]),
            Slot::Roll => set.extend(["#wat = :bucket", "#wn = :one", "#wf = :fail"]),
        }
        if up {
            set.push("#f = :zero");
            remove.push("#since");
        } else {
            set.push("#since = if_not_exists(#since, :now)");
            add.push("#f :one");
        }
        if reopen.is_some() {
            set.push("#opened = :now");
            remove.extend(["#lease", "#probes", "#up", "#down"]);
        } else if probe {
            add.push("#probed :one");
            if up {
                remove.push("#lease");
            }
        }
        let mut expr = format!("SET {}", set.join(", "));
        if !add.is_empty() {
            expr += &format!(" ADD {}", add.join(", "));
        }
        if !remove.is_empty() {
            expr += &format!(" REMOVE {}", remove.join(", "));
        }
        let mut u = self
            .circuit_update(destination)
            .update_expression(expr)
            .expression_attribute_names("#wn", requests)
            .expression_attribute_names("#wf", failures)
            .expression_attribute_names("#f", FAILURES)
            .expression_attribute_names("#since", FAILING_SINCE)
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":fail", n(i64::from(!up)))
            .return_values(ReturnValue::AllNew);
        if up {
            u = u.expression_attribute_values(":zero", n(0));
        } else {
            u = u.expression_attribute_values(":now", n(now.get()));
        }
        if let Some(from) = reopen {
            u = u
                .expression_attribute_names("#opened", OPENED_AT)
                .expression_attribute_names("#lease", PROBE_UNTIL)
                .expression_attribute_names("#probes", PROBES)
                .expression_attribute_names("#up", PROBES_UP)
                .expression_attribute_names("#down", PROBES_DOWN)
                .expression_attribute_values(":from", n(from));
        } else if probe {
            u = u.expression_attribute_names("#probed", if up { PROBES_UP } else { PROBES_DOWN });
            if up {
                u = u.expression_attribute_names("#lease", PROBE_UNTIL);
            }
        }
        let opening = if reopen.is_some() {
            "#opened = :from AND "
        } else {
            ""
        };
        match slot {
            Slot::Add => u
                .condition_expression(format!("{opening}#wat = :bucket"))
                .expression_attribute_names("#wat", at)
                .expression_attribute_values(":bucket", n(bucket)),
            Slot::Roll => u
                .condition_expression(format!(
                    "{opening}(attribute_not_exists(#wat) OR #wat < :bucket)"
                ))
                .expression_attribute_names("#wat", at)
                .expression_attribute_values(":bucket", n(bucket)),
            Slot::Force if reopen.is_some() => u.condition_expression("#opened = :from"),
            Slot::Force => u,
        }
    }

    /// [`crate::outbox::store::OutboxStore::change_circuit`].
    pub(super) async fn count_circuit(
        &self,
        destination: &DestinationId,
        change: Change,
        now: Millis,
    ) -> Result<Option<Circuit>, StoreError> {
        let Change::Count {
            up,
            probe,
            bucket,
            roll,
            reopen,
        } = change
        else {
            return Ok(None);
        };
        let order = if roll {
            [Slot::Roll, Slot::Add, Slot::Force]
        } else {
            [Slot::Add, Slot::Roll, Slot::Force]
        };
        // A failed probe that re-opens: in the same write, if the slot is as read and the
        // circuit is still that opening; else as any count (the worker re-opens it after).
        if reopen.is_some() {
            let update = self.count_update(destination, (up, probe, bucket), order[0], reopen, now);
            if let Some(out) = applied(update.send().await)? {
                let circuit = out.attributes.as_ref().map(|i| worker_state(i).circuit);
                return Ok(Some(circuit.unwrap_or_default()));
            }
        }
        for slot in order {
            let update = self.count_update(destination, (up, probe, bucket), slot, None, now);
            if let Some(out) = applied(update.send().await)? {
                let circuit = out.attributes.as_ref().map(|i| worker_state(i).circuit);
                return Ok(Some(circuit.unwrap_or_default()));
            }
        }
        // Unreachable: the last update has no condition.
        Ok(Some(Circuit::default()))
    }

    /// [`crate::outbox::store::OutboxStore::move_circuit`].
    pub(super) async fn move_circuit_on(
        &self,
        destination: &DestinationId,
        to: Move,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let u = self
            .circuit_update(destination)
            .expression_attribute_names("#opened", OPENED_AT)
            .expression_attribute_names("#probe", PROBE_UNTIL)
            .expression_attribute_names("#probes", PROBES)
            .expression_attribute_names("#up", PROBES_UP)
            .expression_attribute_names("#down", PROBES_DOWN);
        let forget_probes = "#probe, #probes, #up, #down";
        let u = match to {
            Move::Stay => return Ok(false),
            Move::Open => u
                .update_expression(format!(
                    "SET #kind = :kind, #opened = :now REMOVE {forget_probes}"
                ))
                .condition_expression("attribute_not_exists(#opened)")
                .expression_attribute_values(":now", n(now.get())),
            Move::Reopen { from } => u
                .update_expression(format!(
                    "SET #kind = :kind, #opened = :now REMOVE {forget_probes}"
                ))
                .condition_expression("#opened = :from")
                .expression_attribute_values(":now", n(now.get()))
                .expression_attribute_values(":from", n(from)),
            Move::Close { from } => {
                let [a0, n0, f0] = WINDOW_SLOTS[0];
                let [a1, n1, f1] = WINDOW_SLOTS[1];
                u.update_expression(format!(
                    "SET #kind = :kind REMOVE #opened, {forget_probes}, #a0, #n0, #f0, #a1, #n1, #f1"
                ))
                .condition_expression("#opened = :from")
                .expression_attribute_values(":from", n(from))
                .expression_attribute_names("#a0", a0)
                .expression_attribute_names("#n0", n0)
                .expression_attribute_names("#f0", f0)
                .expression_attribute_names("#a1", a1)
                .expression_attribute_names("#n1", n1)
                .expression_attribute_names("#f1", f1)
            }
        };
        Ok(applied(u.send().await)?.is_some())
    }

    /// [`crate::outbox::store::OutboxStore::claim_probe`].
    pub(super) async fn claim_probe_on(
        &self,
        destination: &DestinationId,
        (opened_at, until, now): (Millis, Millis, Millis),
    ) -> Result<bool, StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(PK, s(destination_pk(destination.as_str())))
            .key(SK, s(STATE_SK))
            .update_expression("SET #probe = :until ADD #probes :one")
            .condition_expression(
                "#opened = :opened AND (attribute_not_exists(#probe) OR #probe <= :now)",
            )
            .expression_attribute_names("#probe", PROBE_UNTIL)
            .expression_attribute_names("#probes", PROBES)
            .expression_attribute_names("#opened", OPENED_AT)
            .expression_attribute_values(":until", n(until.get()))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":opened", n(opened_at.get()))
            .expression_attribute_values(":now", n(now.get()))
            .send()
            .await;
        Ok(applied(result)?.is_some())
    }
}
