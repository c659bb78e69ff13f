//! The blob store against a real S3-compatible server: moto's, started by the test on a free
//! port (see `atelier_blob::moto`; `.ci/run` installs it).

use atelier_blob::moto::MotoServer;
use atelier_blob::{output_key, BlobError, BlobStore, Location};
use bytes::Bytes;

#[tokio::test]
async fn s3_round_trip_with_prefix_ranges_and_prefix_deletion() {
    let Some(server) = MotoServer::start("atelier-test") else { return };
    let location = Location::parse("s3://atelier-test/deploy/a").unwrap();
    let blobs = BlobStore::open(&location, &server.settings(), "http://api.example", None).unwrap();

    let key = output_key("run1", "node_a", 0, "png");
    blobs.put(&key, Bytes::from_static(b"0123456789")).await.unwrap();
    assert_eq!(blobs.get(&key).await.unwrap(), &b"0123456789"[..]);
    let meta = blobs.head(&key).await.unwrap();
    assert_eq!(meta.size, 10);
    assert!(meta.etag.starts_with('"') && meta.etag.ends_with('"'), "{}", meta.etag);
    assert_eq!(blobs.get_range(&key, 2..5).await.unwrap(), &b"234"[..]);
    assert_eq!(blobs.get_range(&key, 8..100).await.unwrap(), &b"89"[..]);
    assert!(matches!(blobs.get_range(&key, 10..12).await, Err(BlobError::NotFound)));
    assert!(matches!(blobs.get("outputs/none/x/0.png").await, Err(BlobError::NotFound)));
    assert_eq!(blobs.url(&key), "http://api.example/files/outputs/run1/node_a/0.png");

    // The prefix is where the objects really are: a store on the bucket root sees them there.
    let root = BlobStore::open(
        &Location::parse("s3://atelier-test").unwrap(),
        &server.settings(),
        "http://api.example",
        Some("https://cdn.example/"),
    )
    .unwrap();
    assert!(root.exists(&format!("deploy/a/{key}")).await.unwrap());
    assert_eq!(root.url("deploy/a/x.png"), "https://cdn.example/deploy/a/x.png");

    // Deleting a run's outputs leaves its neighbours alone.
    let other = output_key("run10", "node_a", 0, "png");
    blobs.put(&output_key("run1", "node_b", 1, "jpg"), Bytes::from_static(b"x")).await.unwrap();
    blobs.put(&other, Bytes::from_static(b"y")).await.unwrap();
    assert_eq!(blobs.delete_prefix("outputs/run1").await.unwrap(), 2);
    assert!(!blobs.exists(&key).await.unwrap());
    assert!(blobs.exists(&other).await.unwrap());
    drop(server);
}
