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
    /// An animated image has more frames, or more pixels over all its frames, than the
    /// configured [`crate::Limits`] allow. Counting stops at the first frame over the limits.
    #[error(
        "animated image is too large (at least {frames} frames of {width}x{height} pixels); \
         please upload fewer frames or a smaller animation"
    )]
    TooManyFrames {
        /// Frames counted when the limit was exceeded (the file may hold more).
        frames: u32,
        /// Canvas width declared by the image header.
        width: u32,
        /// Canvas height declared by the image header.
        height: u32,
    },
    /// The image could not be decoded (corrupt or truncated data).
    #[error("the image could not be read: {0}")]
    Decode(String),
    /// The image could not be encoded.
    #[error("the image could not be encoded: {0}")]
    Encode(String),
    /// The learned subject model failed on this image (the message is the model's).
    #[error("the subject model failed: {0}")]
    SubjectModel(String),
    /// An argument was outside its valid range.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}
