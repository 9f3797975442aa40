//! What a deployed stack would get wrong that `sam validate` and cfn-lint cannot see, checked on
//! `template.yaml` by `scripts/check_template.py` (SAM's own translator, offline): least
//! privilege (the deliver role's writes limited to its own key prefixes), scheduled functions never
//! retried beside their next run, secret values out of the template's reach, every method routed
//! to the ingest function, the alarms every function and the front door need (on the stage's own
//! metrics), the deliver stream's parallelism, the charge role's writes limited to the wallets' keys,
//! every wallet API route behind the IAM authorizer, and every role's reads limited to the key
//! prefixes its code reads (compared here with the code's lists; a Scan only where allowed).
//! Here: the check passes on the template, catches each thing it guards against on a template
//! that has it, and the ingest timeout leaves room above the ingest path's worst case.

use integration_tests::{python, root};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn check(template: &Path, extra: &[&str]) -> Output {
    Command::new(python())
        .arg(root().join("scripts/check_template.py"))
        .arg("--template")
        .arg(template)
        .args(extra)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "run scripts/check_template.py with {}: {e}",
                python().display()
            )
        })
}

fn template() -> String {
    std::fs::read_to_string(root().join("template.yaml")).expect("read template.yaml")
}

/// `template.yaml` with `from` replaced by `to` (which must be there), in a temporary file.
fn mutated(name: &str, from: &str, to: &str) -> PathBuf {
    let text = template();
    assert!(
        text.contains(from),
        "template.yaml no longer contains {from:?}"
    );
    let path = std::env::temp_dir().join(format!(
        "template-{name}-{}.yaml",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::write(&path, text.replacen(from, to, 1)).expect("write a mutated template");
    path
}

#[test]
fn the_template_passes_its_checks() {
    let out = check(&root().join("template.yaml"), &[]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_check_catches_what_it_guards_against() {
    let cases = [
        (
            "wildcard",
            "                Resource: !GetAtt IngestLogGroup.Arn\n",
            "                Resource: \"*\"\n",
            "IngestRole, statement Logs: Resource \"*\"",
        ),
        (
            "sam-role",
            "      Role: !GetAtt ReaperRole.Arn\n",
            "",
            "ReaperFunctionRole: managed policy AWSLambdaBasicExecutionRole",
        ),
        (
            "secret",
            "  # ---------------------------------------------------------- 4. processing\n",
            "  Secrets:\n    Type: AWS::SecretsManager::Secret\n    Properties:\n      \
             GenerateSecretString:\n        PasswordLength: 48\n\n  \
             # ---------------------------------------------------------- 4. processing\n",
            "Secrets: GenerateSecretString",
        ),
        (
            "stage",
            "      MetricName: MismatchedWallets\n      Dimensions:\n        - Name: Stage\n",
            "      MetricName: MismatchedWallets\n      Dimensions:\n        - Name: Tier\n",
            "WebhookIngestor/Wallet MismatchedWallets does not filter on the Stage dimension",
        ),
        (
            "unmatched-alarm",
            "      MetricName: UnmatchedPayments\n",
            "      MetricName: UnmatchedPaymentz\n",
            "no alarm on payments unmatched past the window (WebhookIngestor/Wallet UnmatchedPayments)",
        ),
        (
            "forged-alarm",
            "      MetricName: ForgedInternalEvent\n",
            "      MetricName: ForgedInternalEvents\n",
            "no alarm on internal wallet events refused as forged (WebhookIngestor/Wallet ForgedInternalEvent)",
        ),
        (
            "unmatched-stage",
            "      MetricName: UnmatchedPayments\n      Dimensions:\n        - Name: Stage\n",
            "      MetricName: UnmatchedPayments\n      Dimensions:\n        - Name: Tier\n",
            "WebhookIngestor/Wallet UnmatchedPayments does not filter on the Stage dimension",
        ),
        (
            "throttles",
            "      MetricName: Throttles\n      Dimensions:\n        - Name: FunctionName\n          \
             Value: !Ref ReaperFunction\n",
            "      MetricName: Throttles\n      Dimensions:\n        - Name: FunctionName\n          \
             Value: !Ref ProcessFunction\n",
            "ReaperFunction: no alarm on its Lambda Throttles",
        ),
        (
            "reaper-bucket",
            "          BODY_BUCKET: !Ref BodyBucket\n          REAPER_MAX_PER_RUN",
            "          REAPER_MAX_PER_RUN",
            "ReaperFunction: no BODY_BUCKET",
        ),
        (
            "reaper-keeps-bodies",
            "              - Sid: KeepFailedBodies\n                Effect: Allow\n                \
             Action: s3:DeleteObjectTagging\n",
            "              - Sid: KeepFailedBodies\n                Effect: Allow\n                \
             Action: s3:GetObject\n",
            "ReaperFunction: missing s3:DeleteObjectTagging on BodyBucket",
        ),
        (
            "reaper-reads-bodies",
            "              - Sid: KeepFailedBodies\n                Effect: Allow\n                \
             Action: s3:DeleteObjectTagging\n",
            "              - Sid: KeepFailedBodies\n                Effect: Allow\n                \
             Action: [s3:DeleteObjectTagging, s3:GetObject]\n",
            "ReaperFunction: s3:GetObject on BodyBucket is more than it needs",
        ),
        (
            "route",
            "            Method: ANY\n",
            "            Method: GET\n",
            "/webhooks/{source} routes only ['get', 'post']",
        ),
        (
            "wallet-route-open",
            "            Path: /wallets/{tenant}\n            PayloadFormatVersion: \"2.0\"\n            \
             Auth:\n              Authorizer: AWS_IAM\n",
            "            Path: /wallets/{tenant}\n            PayloadFormatVersion: \"2.0\"\n",
            "GET /wallets/{tenant}: no IAM authorizer",
        ),
        (
            "wallet-route-missing",
            "            Path: /wallets/{tenant}/checkout-sessions\n",
            "            Path: /wallets/{tenant}/checkout\n",
            "POST /wallets/{tenant}/checkout-sessions: not routed to WalletApiFunction",
        ),
        (
            "wallet-api-leading-keys-wide",
            "              - Sid: WalletWrite\n                Effect: Allow\n                Action:\n                  \
             - dynamodb:PutItem\n                  - dynamodb:UpdateItem\n                  \
             - dynamodb:ConditionCheckItem\n                Resource: !GetAtt InboxTable.Arn\n                \
             Condition:\n                  ForAllValues:StringLike:\n                    \
             dynamodb:LeadingKeys:\n                      - WALLET#*\n",
            "              - Sid: WalletWrite\n                Effect: Allow\n                Action:\n                  \
             - dynamodb:PutItem\n                  - dynamodb:UpdateItem\n                  \
             - dynamodb:ConditionCheckItem\n                Resource: !GetAtt InboxTable.Arn\n                \
             Condition:\n                  ForAllValues:StringLike:\n                    \
             dynamodb:LeadingKeys:\n                      - \"*\"\n",
            "WalletApiRole, statement WalletWrite: dynamodb:LeadingKeys ['*', 'MSG#wallet#*', 'PROVIDER#stripe'], \
             expected exactly",
        ),
        (
            "parallelism",
            "            ParallelizationFactor: 10\n",
            "",
            "DeliverFunction.OutboxStream: ParallelizationFactor 1",
        ),
        (
            "leading-keys-missing",
            "                Condition:\n                  ForAllValues:StringLike:\n                    \
             dynamodb:LeadingKeys:\n                      - OUT#*\n",
            "                Condition:\n                  ForAllValues:StringLike:\n                    \
             dynamodb:Attributes:\n                      - OUT#*\n",
            "DeliverRole, statement OutboxWrite: dynamodb:PutItem, dynamodb:UpdateItem without a \
             dynamodb:LeadingKeys condition",
        ),
        (
            "leading-keys-wide",
            "                      - FAN#*\n                      - DEST#*\n                      \
             - DESTINATIONS\n              # Destinations'",
            "                      - \"*\"\n                      - DEST#*\n                      \
             - DESTINATIONS\n              # Destinations'",
            "DeliverRole, statement OutboxWrite: dynamodb:LeadingKeys ['OUT#*', '*', 'DEST#*', \
             'DESTINATIONS'], expected exactly",
        ),
        (
            "sweep-retried",
            "      EventInvokeConfig:\n        MaximumRetryAttempts: 0\n        \
             MaximumEventAgeInSeconds: 60\n      Role: !GetAtt DeliverRole.Arn\n",
            "      EventInvokeConfig:\n        MaximumRetryAttempts: 2\n        \
             MaximumEventAgeInSeconds: 60\n      Role: !GetAtt DeliverRole.Arn\n",
            "DeliverFunction: scheduled every minute with EventInvokeConfig MaximumRetryAttempts 2",
        ),
        (
            "sweep-no-invoke-config",
            "      EventInvokeConfig:\n        MaximumRetryAttempts: 0\n        \
             MaximumEventAgeInSeconds: 60\n      Role: !GetAtt ReaperRole.Arn\n",
            "      Role: !GetAtt ReaperRole.Arn\n",
            "ReaperFunction: scheduled without an EventInvokeConfig",
        ),
        (
            "charge-retried",
            "      EventInvokeConfig:\n        MaximumRetryAttempts: 0\n        \
             MaximumEventAgeInSeconds: 60\n      Role: !GetAtt ChargeRole.Arn\n",
            "      EventInvokeConfig:\n        MaximumRetryAttempts: 2\n        \
             MaximumEventAgeInSeconds: 60\n      Role: !GetAtt ChargeRole.Arn\n",
            "ChargeFunction: scheduled every minute with EventInvokeConfig MaximumRetryAttempts 2",
        ),
        (
            "charge-any-secret",
            "                Resource: !Sub arn:${AWS::Partition}:secretsmanager:${AWS::Region}:\
             ${AWS::AccountId}:secret:${StripeSecretName}-??????\n",
            "                Resource: \"*\"\n",
            "ChargeRole, statement ReadStripeKey: Resource \"*\"",
        ),
        (
            "charge-leading-keys-wide",
            "                      - MSG#wallet#*\n",
            "                      - MSG#*\n",
            "ChargeRole, statement AutopayWrite: dynamodb:LeadingKeys ['WALLET#*', 'MSG#*', 'PROVIDER#stripe'], \
             expected exactly",
        ),
        (
            "caller-trusts-the-account",
            "              AWS: !Ref WalletApiCallerPrincipal\n",
            "              AWS: !If\n                - HasWalletApiCaller\n                \
             - !Ref WalletApiCallerPrincipal\n                \
             - !Sub arn:${AWS::Partition}:iam::${AWS::AccountId}:root\n",
            "WalletApiCallerRole: trusts a whole account",
        ),
        (
            "charge-reads-any-item",
            "                Resource: !GetAtt InboxTable.Arn\n                Condition:\n                  \
             ForAllValues:StringLike:\n                    dynamodb:LeadingKeys:\n                      \
             - WALLET#*\n                      - PROVIDER#stripe\n",
            "                Resource: !GetAtt InboxTable.Arn\n",
            "ChargeRole, statement ReadAutopay: dynamodb:GetItem, dynamodb:Query without a \
             dynamodb:LeadingKeys condition",
        ),
        (
            "charge-reads-any-index-shard",
            "                      - AUTOPAY#RECURRING#*\n",
            "                      - \"*\"\n",
            "ChargeRole, statement QueryDueIndex: read dynamodb:LeadingKeys ['AUTOPAY#ATTEMPT#*', '*', 'WALLET#HOLDS#*'], \
             expected exactly",
        ),
        (
            "stripe-429-stage",
            "      MetricName: ProviderRateLimited\n      Dimensions:\n        - Name: Stage\n",
            "      MetricName: ProviderRateLimited\n      Dimensions:\n        - Name: Tier\n",
            "WebhookIngestor/Autopay ProviderRateLimited does not filter on the Stage dimension",
        ),
        (
            "catch-up-writes-any-message",
            "                      - MSG#stripe#*\n",
            "                      - MSG#*\n",
            "CatchUpRole, statement StoreEventsAndCheckpoint: dynamodb:LeadingKeys ['MSG#*', 'PROVIDER#stripe'], \
             expected exactly",
        ),
        (
            "caught-up-unwatched",
            "      MetricName: CaughtUp\n",
            "      MetricName: CaughtUpRenamed\n",
            "no alarm on Stripe events caught up",
        ),
        (
            "iterator-age",
            "      MetricName: IteratorAge\n      Dimensions:\n        - Name: FunctionName\n          \
             Value: !Ref DeliverFunction\n",
            "      MetricName: IteratorAge\n      Dimensions:\n        - Name: FunctionName\n          \
             Value: !Ref ProcessFunction\n",
            "DeliverFunction: a stream invokes it but no alarm watches its IteratorAge",
        ),
    ];
    for (name, from, to, expected) in cases {
        let path = mutated(name, from, to);
        let out = check(&path, &[]);
        let _ = std::fs::remove_file(&path);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name}: not caught");
        assert!(stderr.contains(expected), "{name}: {stderr}");
    }
}

/// What the check prints about `template.yaml` with `extra` (a query, not the checks).
fn answer(extra: &[&str]) -> String {
    let out = check(&root().join("template.yaml"), extra);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_ingest_timeout_leaves_room_above_the_worst_case() {
    let secs: u64 = answer(&["--ingest-timeout"])
        .trim()
        .parse()
        .expect("a number of seconds");
    let timeout = Duration::from_secs(secs);
    let worst = inbox_core::ingest::WORST_CASE;
    // Room for what the worst case does not count (a cold start's credentials, the response).
    assert!(
        timeout >= worst + Duration::from_secs(5),
        "the ingest timeout ({timeout:?}) must leave room above the worst case ({worst:?})"
    );
    assert!(
        timeout < Duration::from_secs(30),
        "API Gateway gives up after 30 s: a longer timeout only hides the 503"
    );
}

#[test]
fn the_deliver_role_writes_only_the_outbox_keys_the_code_writes() {
    let mut template: Vec<String> = answer(&["--leading-keys", "DeliverRole"])
        .lines()
        .map(str::to_owned)
        .collect();
    let mut code: Vec<String> = inbox_core::outbox::schema::DELIVER_WRITES
        .iter()
        .map(|p| (*p).to_owned())
        .collect();
    template.sort();
    code.sort();
    assert_eq!(template, code, "template.yaml's DeliverRole LeadingKeys");
}

#[test]
fn the_charge_role_writes_only_the_wallet_keys_the_pass_writes() {
    let mut template: Vec<String> = answer(&["--leading-keys", "ChargeRole"])
        .lines()
        .map(str::to_owned)
        .collect();
    // The pass's keys and the Stripe account's token bucket (the composition root adds it).
    let mut code = wallet_ledger::autopay::pass::charge_writes();
    code.push(stripe_charges::client::BUCKET_PK.to_owned());
    template.sort();
    code.sort();
    assert_eq!(template, code, "template.yaml's ChargeRole LeadingKeys");
}

#[test]
fn the_charge_role_reads_only_the_keys_the_pass_reads() {
    let template: Vec<String> = answer(&["--leading-reads", "ChargeRole"])
        .lines()
        .map(str::to_owned)
        .collect();
    // The pass reads the wallets' partitions (settings, attempts, the wallet) through the due
    // index's autopay shards, the expiry sweep through its hold shards, and the Stripe
    // account's token bucket.
    let mut code = vec![
        format!("{}*", wallet_ledger::balance::items::wallet_pk("")),
        stripe_charges::client::BUCKET_PK.to_owned(),
        format!(
            "index:{}*",
            wallet_ledger::autopay::items::ATTEMPT_SHARD_PREFIX
        ),
        format!(
            "index:{}*",
            wallet_ledger::autopay::items::RECURRING_SHARD_PREFIX
        ),
        format!(
            "index:{}*",
            wallet_ledger::balance::items::HOLD_SHARD_PREFIX
        ),
    ];
    code.sort();
    assert_eq!(
        template, code,
        "template.yaml's ChargeRole read LeadingKeys"
    );
}

/// The prefixes `role`'s reads are limited to in `template.yaml` (`index:` for the index's).
fn template_reads(role: &str) -> Vec<String> {
    answer(&["--leading-reads", role])
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The code's read list of a role: its table prefixes, and its index partitions as `index:…`.
fn code_reads(table: Vec<String>, index: Vec<String>) -> Vec<String> {
    let mut all: Vec<String> = table
        .into_iter()
        .chain(index.into_iter().map(|p| format!("index:{p}")))
        .collect();
    all.sort();
    all.dedup();
    all
}

fn owned(list: &[&str]) -> Vec<String> {
    list.iter().map(|p| (*p).to_owned()).collect()
}

#[test]
fn the_process_role_reads_only_what_the_processor_and_its_handlers_read() {
    assert_eq!(
        template_reads("ProcessRole"),
        code_reads(process_function::table_reads(), Vec::new()),
        "template.yaml's ProcessRole read LeadingKeys"
    );
}

#[test]
fn the_reaper_role_reads_only_due_messages_and_the_open_shards() {
    assert_eq!(
        template_reads("ReaperRole"),
        code_reads(
            owned(&inbox_core::reaper::REAPER_READS),
            owned(&inbox_core::reaper::REAPER_INDEX_READS)
        ),
        "template.yaml's ReaperRole read LeadingKeys"
    );
}

#[test]
fn the_reconcile_role_reads_only_what_the_reconciliation_reads() {
    use wallet_ledger::ledger::reads::{reconcile_index_reads, reconcile_reads};
    assert_eq!(
        template_reads("ReconcileRole"),
        code_reads(reconcile_reads(), reconcile_index_reads()),
        "template.yaml's ReconcileRole read LeadingKeys"
    );
}

#[test]
fn the_deliver_role_reads_only_the_outbox_keys_and_open_shards_the_code_reads() {
    use inbox_core::outbox::schema::{deliver_index_reads, DELIVER_READS};
    assert_eq!(
        template_reads("DeliverRole"),
        code_reads(owned(&DELIVER_READS), deliver_index_reads()),
        "template.yaml's DeliverRole read LeadingKeys"
    );
}

#[test]
fn the_wallet_api_role_reads_only_the_wallets() {
    // The wallets' partitions, and the Stripe account's token bucket as the charge role has it.
    let mut table = wallet_api::table_reads();
    table.push(stripe_charges::client::BUCKET_PK.to_owned());
    assert_eq!(
        template_reads("WalletApiRole"),
        code_reads(table, Vec::new()),
        "template.yaml's WalletApiRole read LeadingKeys"
    );
}

#[test]
fn the_catch_up_role_writes_the_stripe_messages_and_reads_its_checkpoint_only() {
    use stripe_charges::catch_up::scheduled::{table_reads, table_writes};
    let mut template: Vec<String> = answer(&["--leading-keys", "CatchUpRole"])
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    template.sort();
    // The source the template sets (WALLET_STRIPE_SOURCE: stripe).
    let mut code = table_writes("stripe");
    code.sort();
    assert_eq!(
        template, code,
        "template.yaml's CatchUpRole write LeadingKeys"
    );
    // Its checkpoint, and what the reconciliation against Stripe after a run reads.
    let mut reads = table_reads();
    reads.extend(wallet_ledger::ledger::reads::stripe_reconcile_reads());
    assert_eq!(
        template_reads("CatchUpRole"),
        code_reads(reads, Vec::new()),
        "template.yaml's CatchUpRole read LeadingKeys"
    );
}

#[test]
fn the_ingest_role_and_the_wallet_api_caller_read_nothing_of_the_table() {
    for role in ["IngestRole", "WalletApiCallerRole"] {
        assert_eq!(template_reads(role), Vec::<String>::new(), "{role}");
    }
}

#[test]
fn the_check_catches_a_read_wider_than_the_code_reads() {
    let cases = [
        (
            "process-reads-any-item",
            "                Condition:\n                  ForAllValues:StringLike:\n                    \
             dynamodb:LeadingKeys:\n                      - MSG#*\n                      - DESTINATIONS\n",
            "",
            "ProcessRole, statement InboxRead: dynamodb:GetItem, dynamodb:Query without a \
             dynamodb:LeadingKeys condition",
        ),
        (
            "process-reads-the-registry",
            "                      - PAYMENT_METHOD#*\n",
            "                      - PAYMENT_METHOD#*\n                      - WALLETS\n",
            "ProcessRole, statement InboxRead: read dynamodb:LeadingKeys",
        ),
        (
            "process-reads-the-index",
            "              - Sid: InboxRead\n",
            "              - Sid: QueryIndex\n                Effect: Allow\n                \
             Action: dynamodb:Query\n                Resource: !Sub ${InboxTable.Arn}/index/open-index\n                \
             Condition:\n                  ForAllValues:StringLike:\n                    \
             dynamodb:LeadingKeys:\n                      - OPEN#*\n              - Sid: InboxRead\n",
            "ProcessRole, statement QueryIndex: dynamodb:Query on the index, which ProcessRole's \
             code never reads",
        ),
        (
            "reaper-reads-every-shard",
            "                      - OPEN#*\n",
            "                      - \"*\"\n",
            "ReaperRole, statement QueryOpenIndex: read dynamodb:LeadingKeys ['*'], expected exactly",
        ),
        (
            "reaper-loses-its-get",
            "              - Sid: ReadDueMessages\n                Effect: Allow\n                \
             Action: dynamodb:GetItem\n",
            "              - Sid: ReadDueMessages\n                Effect: Allow\n                \
             Action: dynamodb:Query\n",
            "ReaperRole: read actions on the table ['dynamodb:Query'], expected exactly \
             ['dynamodb:GetItem'] (missing dynamodb:GetItem",
        ),
        (
            "reconcile-scan-beside-reads",
            "                Action:\n                  - dynamodb:Query\n                  - dynamodb:GetItem\n",
            "                Action:\n                  - dynamodb:Scan\n                  - dynamodb:Query\n                  \
             - dynamodb:GetItem\n",
            "ReconcileRole, statement ReadWalletsAndMessages: dynamodb:Scan beside dynamodb:GetItem, \
             dynamodb:Query",
        ),
        (
            "reconcile-reads-every-index-shard",
            "                      - UNMATCHED\n",
            "                      - \"*\"\n",
            "ReconcileRole, statement ReadUnmatchedAndOverdue: read dynamodb:LeadingKeys \
             ['*', 'AUTOPAY#ATTEMPT#*'], expected exactly ['UNMATCHED', 'AUTOPAY#ATTEMPT#*']",
        ),
        (
            "deliver-scans",
            "                  - dynamodb:BatchGetItem\n",
            "                  - dynamodb:BatchGetItem\n                  - dynamodb:Scan\n",
            "DeliverRole, statement OutboxRead: dynamodb:Scan reads every item of the table",
        ),
        (
            "deliver-loses-batch-get",
            "                  - dynamodb:BatchGetItem\n",
            "",
            "DeliverRole: read actions on the table ['dynamodb:GetItem', 'dynamodb:Query'], expected \
             exactly ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:Query'] (missing \
             dynamodb:BatchGetItem",
        ),
        (
            "deliver-reads-done-shards",
            "                      - OUTBOX#??\n",
            "                      - OUTBOX#*\n",
            "DeliverRole, statement SweepOpenIndex: read dynamodb:LeadingKeys ['OUTBOX#?', 'OUTBOX#*', \
             'PARKED#*'], expected exactly",
        ),
        (
            "wallet-api-reads-payments",
            "              - Sid: ReadWallets\n                Effect: Allow\n                Action:\n                  \
             - dynamodb:GetItem\n                  - dynamodb:Query\n                Resource: !GetAtt InboxTable.Arn\n                \
             Condition:\n                  ForAllValues:StringLike:\n                    \
             dynamodb:LeadingKeys:\n                      - WALLET#*\n",
            "              - Sid: ReadWallets\n                Effect: Allow\n                Action:\n                  \
             - dynamodb:GetItem\n                  - dynamodb:Query\n                Resource: !GetAtt InboxTable.Arn\n                \
             Condition:\n                  ForAllValues:StringLike:\n                    \
             dynamodb:LeadingKeys:\n                      - PAYMENT#*\n",
            "WalletApiRole, statement ReadWallets: read dynamodb:LeadingKeys ['PAYMENT#*', \
             'PROVIDER#stripe'], expected exactly",
        ),
        (
            "ingest-reads",
            "                Action: dynamodb:PutItem\n                Resource: !GetAtt InboxTable.Arn\n",
            "                Action: [dynamodb:PutItem, dynamodb:GetItem]\n                \
             Resource: !GetAtt InboxTable.Arn\n",
            "IngestRole, statement InboxPut: dynamodb:GetItem on the table, but IngestRole has no \
             read list",
        ),
    ];
    for (name, from, to, expected) in cases {
        let path = mutated(name, from, to);
        let out = check(&path, &[]);
        let _ = std::fs::remove_file(&path);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name}: not caught");
        assert!(stderr.contains(expected), "{name}: {stderr}");
    }
}
