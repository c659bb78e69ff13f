//! The crate's error type.

/// Errors returned by the fallible operations of this crate (decoding, encoding, validation).
///
/// The `Display` messages are written for end users and never contain internal details beyond
/// the underlying codec's short description.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImagingError {
    /// The bytes are not a PNG, JPEG, WebP or GIF image.
    #[error("unsupported image format: please upload a PNG, JPEG, WebP or GIF image")]
    UnsupportedFormat,
    /// The image dimensions exceed the configured [`crate::Limits`].
    #[error("image is too large ({width}x{height} pixels); please upload a smaller image")]
    TooLarge {
        /// Width declared by the image header.
        width: u32,
        /// Height declared by the image header.
        height: u32,
    },
    /// The image could not be decoded (corrupt or truncated data).
    #[error("the image could not be read: {0}")]
    Decode(String),
    /// The image could not be encoded.
    #[error("the image could not be encoded: {0}")]
    Encode(String),
    /// An argument was outside its valid range.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}
