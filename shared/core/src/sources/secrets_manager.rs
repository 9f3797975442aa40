//! The secrets JSON kept in AWS Secrets Manager (the cloud's [`SecretsFetch`]): read at cold
//! start when `WEBHOOK_SECRETS_ARN` is set, and again by a warm ingest function ([`super::live`]),
//! each read ending within [`SECRETS_FETCH_TIMEOUT`]. Errors name the variable, never a secret.

use super::SecretsFetch;
use crate::config::{vars, ConfigError, SECRETS_FETCH_TIMEOUT};
use futures_util::future::BoxFuture;
use std::time::Duration;

/// The secrets JSON in an AWS Secrets Manager secret (its `SecretString`), read with a client
/// whose every read ends within [`SECRETS_FETCH_TIMEOUT`] (it runs inside a request when a warm
/// function re-reads it).
#[derive(Debug, Clone)]
pub struct SecretsManagerSecrets {
    client: aws_sdk_secretsmanager::Client,
    arn: String,
}

impl SecretsManagerSecrets {
    pub fn new(aws: &aws_config::SdkConfig, arn: impl Into<String>) -> Self {
        use aws_sdk_secretsmanager::config::timeout::TimeoutConfig;
        let config = aws_sdk_secretsmanager::config::Builder::from(aws)
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(Duration::from_millis(1_000))
                    .operation_attempt_timeout(Duration::from_millis(1_000))
                    .operation_timeout(SECRETS_FETCH_TIMEOUT)
                    .build(),
            )
            .build();
        Self {
            client: aws_sdk_secretsmanager::Client::from_conf(config),
            arn: arn.into(),
        }
    }

    /// Reads the secret now.
    pub async fn read(&self) -> Result<String, ConfigError> {
        read_secret(&self.client, &self.arn, vars::WEBHOOK_SECRETS_ARN).await
    }

    /// Reads the secret now; errors name `var` (the variable that gave its ARN).
    pub async fn read_for(&self, var: &'static str) -> Result<String, ConfigError> {
        read_secret(&self.client, &self.arn, var).await
    }
}

impl SecretsFetch for SecretsManagerSecrets {
    fn fetch(&self) -> BoxFuture<'_, Result<String, ConfigError>> {
        Box::pin(self.read())
    }
}

/// Reads the secrets JSON from the AWS Secrets Manager secret `arn` (its `SecretString`).
pub async fn fetch_secret(aws: &aws_config::SdkConfig, arn: &str) -> Result<String, ConfigError> {
    SecretsManagerSecrets::new(aws, arn).read().await
}

async fn read_secret(
    client: &aws_sdk_secretsmanager::Client,
    arn: &str,
    var: &'static str,
) -> Result<String, ConfigError> {
    let out = client
        .get_secret_value()
        .secret_id(arn)
        .send()
        .await
        .map_err(|e| ConfigError::SecretsManager {
            var,
            reason: aws_sdk_secretsmanager::error::DisplayErrorContext(e).to_string(),
        })?;
    out.secret_string
        .ok_or_else(|| ConfigError::SecretsManager {
            var,
            reason: "the secret has no SecretString".into(),
        })
}
