//! The event sources the pipeline plays, as Lambda would: the table's stream (filtered like the
//! event source mapping) and the retry queue (receive, process, delete what was handled).

use super::{Pipeline, TestProcessor};
use aws_lambda_events::event::dynamodb::{Event as StreamEvent, EventRecord, StreamRecord};
use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use aws_sdk_dynamodbstreams::types::ShardIteratorType;
use inbox_core::clock::Clock;

/// A consumer's position in one shard: its iterator, and the last sequence number read (to
/// resume from after an error: the emulator paused or killed, a trimmed iterator).
#[derive(Debug, Clone)]
pub(super) struct Cursor {
    shard_id: String,
    iterator: Option<String>,
    checkpoint: Option<String>,
}

impl Pipeline {
    pub(super) async fn open_stream(&self) {
        let table = self
            .harness
            .client
            .describe_table()
            .table_name(&self.harness.table)
            .send()
            .await
            .expect("describe table");
        let arn = table
            .table
            .and_then(|t| t.latest_stream_arn)
            .expect("the table has a stream");
        let stream = self
            .streams
            .describe_stream()
            .stream_arn(&arn)
            .send()
            .await
            .expect("describe stream");
        let shards = stream
            .stream_description
            .map(|d| d.shards.unwrap_or_default())
            .unwrap_or_default();
        *self.stream_arn.lock().expect("lock") = arn;
        let mut cursors = Vec::new();
        for shard in shards {
            let mut cursor = Cursor {
                shard_id: shard.shard_id.unwrap_or_default(),
                iterator: None,
                checkpoint: None,
            };
            cursor.iterator = Some(self.iterator(&cursor).await.expect("shard iterator"));
            cursors.push(cursor);
        }
        *self.cursors.lock().expect("lock") = cursors;
    }

    /// A fresh iterator for `cursor`: after its checkpoint, or from the shard's start.
    async fn iterator(&self, cursor: &Cursor) -> Result<String, String> {
        let arn = self.stream_arn.lock().expect("lock").clone();
        let request = self
            .streams
            .get_shard_iterator()
            .stream_arn(arn)
            .shard_id(&cursor.shard_id);
        let request = match &cursor.checkpoint {
            Some(seq) => request
                .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                .sequence_number(seq),
            None => request.shard_iterator_type(ShardIteratorType::TrimHorizon),
        };
        let out = request.send().await.map_err(|e| format!("{e:?}"))?;
        out.shard_iterator
            .ok_or_else(|| "no shard iterator".to_string())
    }

    /// Every stream record written since the last read, as Lambda would deliver it, filtered like
    /// the event source mapping (`eventName` INSERT, `dynamodb.Keys.sk.S` = `MSG`).
    pub async fn read_stream(&self) -> StreamEvent {
        self.try_read_stream().await.expect("read the stream")
    }

    /// Every INSERT since the last read whose sort key passes `wanted` (the deliver function's
    /// mapping: `OUT` and `FAN`). Records not wanted are consumed all the same.
    pub async fn read_stream_where(&self, wanted: impl Fn(&str) -> bool) -> StreamEvent {
        self.try_read_stream_where(&wanted)
            .await
            .expect("read the stream")
    }

    /// [`Pipeline::read_stream`], or the error (the emulator paused, killed or restarting): the
    /// next call asks for new iterators from the last sequence number read.
    pub async fn try_read_stream(&self) -> Result<StreamEvent, String> {
        self.try_read_stream_where(&|sk| sk == "MSG").await
    }

    async fn try_read_stream_where(
        &self,
        wanted: &dyn Fn(&str) -> bool,
    ) -> Result<StreamEvent, String> {
        let mut cursors = self.cursors.lock().expect("lock").clone();
        let mut records = Vec::new();
        let mut failure = None;
        for cursor in &mut cursors {
            match self.read_shard(cursor, &mut records, wanted).await {
                Ok(()) => {}
                Err(e) => {
                    cursor.iterator = None;
                    failure = Some(e);
                }
            }
        }
        *self.cursors.lock().expect("lock") = cursors;
        if let Some(e) = failure {
            if records.is_empty() {
                return Err(e);
            }
        }
        let mut event = StreamEvent::default();
        event.records = records;
        Ok(event)
    }

    async fn read_shard(
        &self,
        cursor: &mut Cursor,
        records: &mut Vec<EventRecord>,
        wanted: &dyn Fn(&str) -> bool,
    ) -> Result<(), String> {
        // Page by page until a page comes back empty: DynamoDB (and DynamoDB Local) may return a
        // shard's records over several pages.
        for _ in 0..1000 {
            if self.read_page(cursor, records, wanted).await? == 0 || cursor.iterator.is_none() {
                return Ok(());
            }
        }
        Ok(())
    }

    /// One `GetRecords` page: how many records it held (wanted or not).
    async fn read_page(
        &self,
        cursor: &mut Cursor,
        records: &mut Vec<EventRecord>,
        wanted: &dyn Fn(&str) -> bool,
    ) -> Result<usize, String> {
        let iterator = match cursor.iterator.take() {
            Some(it) => it,
            None => self.iterator(cursor).await?,
        };
        let out = match self
            .streams
            .get_records()
            .shard_iterator(iterator)
            .send()
            .await
        {
            Ok(out) => out,
            // Trimmed: DynamoDB drops records after 24 hours; DynamoDB Local also refuses an
            // iterator taken while the shard was empty once other tables' writes moved its shared
            // sequence numbers on. Either way, what Lambda does: a fresh iterator from the
            // checkpoint, else from the trim horizon.
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_trimmed_data_access_exception()) =>
            {
                let iterator = self.iterator(cursor).await?;
                self.streams
                    .get_records()
                    .shard_iterator(iterator)
                    .send()
                    .await
                    .map_err(|e| format!("{e:?}"))?
            }
            Err(e) => return Err(format!("{e:?}")),
        };
        let page = out.records.unwrap_or_default();
        let read = page.len();
        for r in page {
            let name = r
                .event_name
                .as_ref()
                .map(|n| n.as_str().to_owned())
                .unwrap_or_default();
            let Some(change) = r.dynamodb else { continue };
            cursor.checkpoint.clone_from(&change.sequence_number);
            let keys = serde_dynamo::Item::from(change.keys.clone().unwrap_or_default());
            let sk_is_wanted =
                matches!(keys.get("sk"), Some(serde_dynamo::AttributeValue::S(s)) if wanted(s));
            if name != "INSERT" || !sk_is_wanted {
                continue;
            }
            let mut stream_record = StreamRecord::default();
            stream_record.keys = keys;
            stream_record.new_image =
                serde_dynamo::Item::from(change.new_image.unwrap_or_default());
            stream_record.sequence_number = change.sequence_number;
            let mut record = EventRecord::default();
            record.event_name = name;
            record.event_id = r.event_id.unwrap_or_default();
            record.event_source = Some("aws:dynamodb".into());
            record.change = stream_record;
            records.push(record);
        }
        cursor.iterator = out.next_shard_iterator;
        Ok(read)
    }

    /// Receives what is visible on a queue now (long-poll 1 s), as a Lambda SQS event.
    pub async fn receive(&self, url: &str) -> SqsEvent {
        let out = self
            .sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await
            .expect("receive");
        let mut event = SqsEvent::default();
        event.records = out
            .messages
            .unwrap_or_default()
            .into_iter()
            .map(|m| {
                let mut msg = SqsMessage::default();
                msg.message_id = m.message_id;
                msg.receipt_handle = m.receipt_handle;
                msg.body = m.body;
                msg.event_source = Some("aws:sqs".into());
                msg
            })
            .collect();
        event
    }

    /// Deletes the messages of `event` that are not in `failed` (what the SQS event source does).
    pub async fn delete_handled(&self, url: &str, event: &SqsEvent, failed: &[String]) {
        for m in &event.records {
            if failed.iter().any(|f| Some(f) == m.message_id.as_ref()) {
                continue;
            }
            if let Some(handle) = &m.receipt_handle {
                self.sqs
                    .delete_message()
                    .queue_url(url)
                    .receipt_handle(handle)
                    .send()
                    .await
                    .expect("delete");
            }
        }
    }

    /// Plays the retry queue's event source once: receive, process, delete the handled ones.
    /// Returns how many records were delivered.
    pub async fn drain_retry_once<C: Clock>(&self, p: &TestProcessor<C>) -> usize {
        let event = self.receive(&self.retry_url).await;
        let n = event.records.len();
        if n > 0 {
            let (response, _) = p.handle_sqs_batch(event.clone()).await;
            let failed: Vec<String> = response
                .batch_item_failures
                .iter()
                .map(|f| f.item_identifier.clone())
                .collect();
            self.delete_handled(&self.retry_url, &event, &failed).await;
        }
        n
    }
}
