//! Where things are kept in object storage: the one place that spells an object key. Three
//! kinds of object: the outputs of runs (`outputs/{run}/{node}/{index}.{ext}`), the inline
//! images of runs (`inputs/{account}/{id}-{digest}`) and uploaded images
//! (`uploads/{account}/{id}-{digest}`). Object storage validates keys
//! (`atelier_blob::validate_key`); this only says where each thing goes.

/// The key of a generated output: `outputs/{run}/{node}/{index}.{ext}`.
pub fn output(run_id: &str, node: &str, index: usize, ext: &str) -> String {
    format!("{}{index}.{ext}", node_outputs(run_id, node))
}

/// The prefix of every output of one node: `outputs/{run}/{node}/`.
pub fn node_outputs(run_id: &str, node: &str) -> String {
    format!("{}{node}/", run_outputs(run_id))
}

/// The prefix of every output of one run: `outputs/{run}/`.
pub fn run_outputs(run_id: &str) -> String {
    format!("outputs/{run_id}/")
}

/// The run an output key belongs to; `None` for a key that is not an output's.
pub fn run_of_output(key: &str) -> Option<&str> {
    key.strip_prefix("outputs/")?.split('/').next().filter(|run| !run.is_empty())
}

/// The SHA-256 of `bytes`, as lowercase hex: the digest stored inputs and uploads are
/// addressed by (and the result cache's keys).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// The key of a run's inline image: `inputs/{account}/{id}-{digest}`.
pub fn input(account_id: i64, id: i64, digest: &str) -> String {
    format!("{}{id}-{digest}", account_inputs(account_id))
}

/// The prefix of every inline image of one account: `inputs/{account}/`.
pub fn account_inputs(account_id: i64) -> String {
    format!("inputs/{account_id}/")
}

/// The key of an uploaded image: `uploads/{account}/{id}-{digest}`.
pub fn upload(account_id: i64, id: i64, digest: &str) -> String {
    format!("{}{id}-{digest}", account_uploads(account_id))
}

/// The prefix of every uploaded image of one account: `uploads/{account}/`.
pub fn account_uploads(account_id: i64) -> String {
    format!("uploads/{account_id}/")
}

/// Whether `key` is an uploaded image's (its object holds the image's bytes; an inline
/// image's holds the value as sent).
pub fn is_upload(key: &str) -> bool {
    key.starts_with("uploads/")
}

/// Where a direct upload's bytes wait for their check (`POST /api/v3/uploads/direct`): the
/// client `PUT`s them there, and the completion moves them under their upload key.
pub fn staged_upload(account_id: i64, id: &str) -> String {
    format!("staging/{account_id}/{id}")
}

/// Every staged upload.
pub const STAGED_UPLOADS: &str = "staging";

/// How long a direct upload's signed URL takes the bytes; staged bytes not completed within
/// as long again after they were sent are swept.
pub const STAGED_UPLOAD_WINDOW: std::time::Duration = std::time::Duration::from_secs(3600);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_under_its_prefix() {
        assert_eq!(output("wr_1", "Upscale", 2, "png"), "outputs/wr_1/Upscale/2.png");
        assert!(output("wr_1", "Upscale", 2, "png").starts_with(&node_outputs("wr_1", "Upscale")));
        assert!(node_outputs("wr_1", "Upscale").starts_with(&run_outputs("wr_1")));
        assert_eq!(run_of_output("outputs/wr_1/Upscale/2.png"), Some("wr_1"));
        assert_eq!(run_of_output("inputs/1/2-d"), None);
        assert_eq!(run_of_output("outputs/"), None);
        assert_eq!(input(7, 42, "ab"), "inputs/7/42-ab");
        assert!(input(7, 42, "ab").starts_with(&account_inputs(7)));
        assert_eq!(upload(7, 42, "ab"), "uploads/7/42-ab");
        assert!(upload(7, 42, "ab").starts_with(&account_uploads(7)));
        assert!(is_upload(&upload(7, 42, "ab")) && !is_upload(&input(7, 42, "ab")));
    }
}
