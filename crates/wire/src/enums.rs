//! What every string enum of the interface has beside its derives.

/// A string enum of the interface: `as_str`, `ALL` (without `Unknown`), `Display`, and the
/// names of every known value. Serde and the schema come from the derives beside it.
macro_rules! wire_enum {
    ($ty:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $ty {
            /// Every value the server writes.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The value as the interface spells it (`unknown` for [`Self::Unknown`]).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)+
                    Self::Unknown => "unknown",
                }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use wire_enum;
