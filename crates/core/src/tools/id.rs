//! A tool's identity: [`ToolId`], by the name the interface uses, and every tool in order.

use serde::{Deserialize, Serialize};

/// A tool, by the name the interface uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolId {
    VirtualTryon,
    VirtualTryonPro,
    VirtualTryonProFit,
    VirtualModel,
    Fabric,
    SketchToDress,
    Upscale,
    Multipose,
    Video,
    BackgroundRemoval,
    Reframe,
    ProductShoot,
}

impl ToolId {
    /// Every tool, in the order the interface lists them.
    pub const ALL: [ToolId; 12] = [
        Self::VirtualTryon,
        Self::VirtualTryonPro,
        Self::VirtualTryonProFit,
        Self::VirtualModel,
        Self::Fabric,
        Self::SketchToDress,
        Self::Upscale,
        Self::Multipose,
        Self::Video,
        Self::BackgroundRemoval,
        Self::Reframe,
        Self::ProductShoot,
    ];
}
