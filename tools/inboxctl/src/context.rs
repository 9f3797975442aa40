//! What commands run against: the global options (completed from the environment through the
//! core's `Env`), the AWS configuration from the standard environment, and the core's store and
//! retry queue built from them.

use crate::cli::Global;
use crate::error::{usage, Result};
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use inbox_core::config::{catalog, Env, Var};
use inbox_core::queue::sqs::SqsRetryQueue;
use inbox_core::store::dynamo::DynamoTable;
use std::time::Duration;
use tokio::sync::OnceCell;

/// The global options, the environment and lazily loaded AWS clients.
pub struct Context {
    pub global: Global,
    env: Env,
    sdk: OnceCell<aws_config::SdkConfig>,
}

/// A flag's value, else the variable's (a flag given empty stays empty: a usage error later).
fn flag_or(flag: Option<String>, env: &Env, var: &Var) -> Option<String> {
    flag.or_else(|| env.optional(var))
}

impl Context {
    /// Completes the global options the command line left out from `env` (`TABLE_NAME`,
    /// `RETRY_QUEUE_URL`, `QUARANTINE_QUEUE_URL`, `INBOXCTL_JSON`); an invalid value is a usage
    /// error naming the variable.
    pub fn new(mut global: Global, env: Env) -> Result<Self> {
        global.table = flag_or(global.table, &env, &catalog::TABLE_NAME);
        global.retry_queue_url = flag_or(global.retry_queue_url, &env, &catalog::RETRY_QUEUE_URL);
        global.quarantine_queue_url = flag_or(
            global.quarantine_queue_url,
            &env,
            &catalog::QUARANTINE_QUEUE_URL,
        );
        global.delivery_queue_url = flag_or(
            global.delivery_queue_url,
            &env,
            &catalog::DELIVERY_QUEUE_URL,
        );
        if !global.json {
            global.json = env
                .parse(&catalog::INBOXCTL_JSON)
                .map_err(|e| usage(e.to_string()))?;
        }
        Ok(Self {
            global,
            env,
            sdk: OnceCell::new(),
        })
    }

    /// The environment, for commands that read more of it (`send`).
    pub fn env(&self) -> &Env {
        &self.env
    }

    /// Whether to print JSON.
    pub fn json(&self) -> bool {
        self.global.json
    }

    /// The AWS configuration: `aws_config::load_from_env()` honours `AWS_ENDPOINT_URL`, so the
    /// same command works against the local emulator and AWS.
    pub async fn sdk(&self) -> &aws_config::SdkConfig {
        self.sdk.get_or_init(aws_config::load_from_env).await
    }

    /// The table name, or a usage error naming both ways to give it.
    pub fn table(&self) -> Result<&str> {
        self.global
            .table
            .as_deref()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| usage("no table: pass --table NAME or set TABLE_NAME"))
    }

    /// A DynamoDB client for an operator: patient timeouts (scans of a big table take a while),
    /// standard retries.
    pub async fn dynamodb(&self) -> aws_sdk_dynamodb::Client {
        let config = aws_sdk_dynamodb::config::Builder::from(self.sdk().await)
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(3))
                    .operation_attempt_timeout(Duration::from_secs(30))
                    .build(),
            )
            .retry_config(RetryConfig::standard().with_max_attempts(3))
            .build();
        aws_sdk_dynamodb::Client::from_conf(config)
    }

    /// The message store on the table, with the operator's client ([`Self::dynamodb`]); the
    /// destinations' secrets sealed with `DESTINATION_SECRETS_KEY` when it is set.
    pub async fn store(&self) -> Result<DynamoTable> {
        let table = self.table()?.to_owned();
        let bodies =
            inbox_core::store::dynamo::body::BodyConfig::read(&inbox_core::config::Env::process())?
                .s3(self.sdk().await);
        let key = inbox_core::store::dynamo::SecretsKey::from_env(&self.env, self.sdk().await);
        Ok(DynamoTable::new(self.dynamodb().await, table)
            .with_bodies(bodies)
            .with_secrets_key(key))
    }

    /// An SQS client.
    pub async fn sqs(&self) -> aws_sdk_sqs::Client {
        aws_sdk_sqs::Client::new(self.sdk().await)
    }

    /// The retry queue URL, or a usage error.
    pub fn retry_url(&self) -> Result<&str> {
        self.global
            .retry_queue_url
            .as_deref()
            .filter(|u| !u.is_empty())
            .ok_or_else(|| {
                usage("replays re-drive through the retry queue: pass --retry-queue-url URL or set RETRY_QUEUE_URL")
            })
    }

    /// The quarantine queue URL, if configured.
    pub fn quarantine_url(&self) -> Option<&str> {
        self.global
            .quarantine_queue_url
            .as_deref()
            .filter(|u| !u.is_empty())
    }

    /// The delivery queue URL, if configured.
    pub fn delivery_queue_url(&self) -> Option<&str> {
        self.global
            .delivery_queue_url
            .as_deref()
            .filter(|u| !u.is_empty())
    }

    /// The retry queue replays re-drive through (the only queue a replay writes to).
    pub async fn retry_queue(&self) -> Result<SqsRetryQueue> {
        let url = self.retry_url()?.to_owned();
        Ok(SqsRetryQueue::new(self.sqs().await, url))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn global(table: Option<&str>, json: bool) -> Global {
        Global {
            table: table.map(Into::into),
            retry_queue_url: None,
            quarantine_queue_url: None,
            delivery_queue_url: None,
            json,
        }
    }

    #[test]
    fn flags_win_and_the_environment_fills_in_by_the_functions_rules() {
        let env = || {
            Env::from_pairs([
                ("TABLE_NAME", " from-env "),
                ("RETRY_QUEUE_URL", "http://retry"),
                ("QUARANTINE_QUEUE_URL", "  "),
                ("INBOXCTL_JSON", "true"),
            ])
        };
        let ctx = Context::new(global(None, false), env()).expect("valid");
        assert_eq!(ctx.table().expect("a table"), "from-env");
        assert_eq!(ctx.retry_url().expect("a queue"), "http://retry");
        assert_eq!(ctx.quarantine_url(), None, "blank counts as unset");
        assert!(ctx.json());
        let ctx = Context::new(global(Some("flag"), false), env()).expect("valid");
        assert_eq!(ctx.table().expect("a table"), "flag");
        // A flag given empty is not replaced by the environment: it is a usage error.
        let ctx = Context::new(global(Some(""), false), env()).expect("valid");
        assert!(matches!(ctx.table(), Err(Error::Usage(m)) if m.contains("TABLE_NAME")));
        let none =
            Context::new(global(None, false), Env::from_pairs::<&str, &str>([])).expect("valid");
        assert!(matches!(none.table(), Err(Error::Usage(_))));
        assert!(!none.json());
    }

    #[test]
    fn an_invalid_variable_is_a_usage_error_naming_it() {
        let bad = Env::from_pairs([("INBOXCTL_JSON", "yes please")]);
        match Context::new(global(None, false), bad) {
            Err(Error::Usage(m)) => assert!(m.contains("INBOXCTL_JSON"), "{m}"),
            other => panic!("expected a usage error, got {:?}", other.map(|_| ())),
        }
        // `--json` given: the variable is not consulted.
        let bad = Env::from_pairs([("INBOXCTL_JSON", "yes please")]);
        assert!(Context::new(global(None, true), bad).is_ok());
    }
}
