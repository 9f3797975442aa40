//! Plain item access on DynamoDB for applications' own items (strongly consistent reads; a
//! destination's sealed secrets opened, see `sealed`).

use super::{classify, DynamoTable};
use crate::store::attr::s;
use crate::store::schema::*;
use crate::store::{Item, ItemStore, StoreError};

impl ItemStore for DynamoTable {
    async fn get_item(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(PK, s(pk))
            .key(SK, s(sk))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        let mut item = out.item;
        if let Some(item) = item.as_mut() {
            self.open_destination(item).await?;
        }
        Ok(item)
    }

    async fn query_items(&self, pk: &str, sk_prefix: &str) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                .expression_attribute_names("#pk", PK)
                .expression_attribute_names("#sk", SK)
                .expression_attribute_values(":pk", s(pk))
                .expression_attribute_values(":prefix", s(sk_prefix))
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            for mut item in page.items.unwrap_or_default() {
                self.open_destination(&mut item).await?;
                items.push(item);
            }
            start = page.last_evaluated_key;
            if start.is_none() {
                return Ok(items);
            }
        }
    }

    async fn items_of_kind(&self, kind: &str) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        self.scan_kind(kind, |page| {
            items.extend(page);
            Ok(true)
        })
        .await?;
        for item in &mut items {
            self.open_destination(item).await?;
        }
        Ok(items)
    }
}
