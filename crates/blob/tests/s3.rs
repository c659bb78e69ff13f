//! The blob store against a real S3-compatible server: moto's, started by the test on a free
//! port (see `atelier_testkit::moto`; `.ci/run` installs it).

use atelier_blob::{output_key, BlobError, BlobStore, Location};
use atelier_testkit::moto::MotoServer;
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
    // A copy inside the bucket, under the same prefix; a missing source is NotFound.
    let copy = output_key("run2", "node_a", 0, "png");
    blobs.copy(&key, &copy).await.unwrap();
    assert_eq!(blobs.get(&copy).await.unwrap(), &b"0123456789"[..]);
    assert!(matches!(blobs.copy("outputs/none/x/0.png", &copy).await, Err(BlobError::NotFound)));
    blobs.delete(&copy).await.unwrap();

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

#[tokio::test]
async fn local_objects_copy_into_s3_under_a_prefix_and_are_verified() {
    let Some(server) = MotoServer::start("atelier-copy") else { return };
    let dir = tempfile::tempdir().unwrap();
    let local = BlobStore::local(dir.path(), "http://api.example").unwrap();
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    local.put(&output_key("run1", "upscale", 0, "png"), Bytes::from(big.clone())).await.unwrap();
    local.put(&output_key("run2", "Shoot", 0, "png"), Bytes::from_static(b"shoot")).await.unwrap();
    local.put(&output_key("run2", "Story", 0, "jpg"), Bytes::from_static(b"story")).await.unwrap();

    let location = Location::parse("s3://atelier-copy/migrated").unwrap();
    let s3 = BlobStore::open(&location, &server.settings(), "http://api.example", None).unwrap();
    s3.ping().await.unwrap();
    let report = atelier_blob::copy_objects(&local, &s3).await.unwrap();
    assert_eq!((report.objects, report.bytes, report.copied), (3, 200_010, 3));
    assert_eq!(s3.get(&output_key("run1", "upscale", 0, "png")).await.unwrap(), big);
    let listed: Vec<(String, u64)> =
        s3.list(None).await.unwrap().into_iter().map(|o| (o.key, o.size)).collect();
    assert_eq!(
        listed,
        vec![
            ("outputs/run1/upscale/0.png".to_string(), 200_000),
            ("outputs/run2/Shoot/0.png".to_string(), 5),
            ("outputs/run2/Story/0.jpg".to_string(), 5),
        ]
    );
    let again = atelier_blob::copy_objects(&local, &s3).await.unwrap();
    assert_eq!((again.objects, again.copied, again.already_present), (3, 0, 3));

    // A bucket that does not exist does not answer a ping.
    let missing = Location::parse("s3://no-such-bucket").unwrap();
    let nowhere = BlobStore::open(&missing, &server.settings(), "http://api.example", None).unwrap();
    assert!(matches!(nowhere.ping().await, Err(BlobError::Backend(_))));
    drop(server);
}
