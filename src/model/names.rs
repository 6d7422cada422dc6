//! Enums of named values: every variant has one name, the word users type
//! (`--profile quick`, `-p placement=cross-cpu`), records store (serde) and
//! tables print. `named_enum!` (crate-private) declares such an
//! enum with each variant's name written once beside it, and derives from
//! that one list the name (`as_str`), the parser (`from_name`, `FromStr`),
//! every value (`ALL`, `NAMES`), `Display`, and the serde form; [`Named`] is
//! what generic code (a choice parameter's list and parser) asks of them.

/// A fieldless enum whose every variant has one name (declared with
/// `named_enum!`).
pub trait Named: Copy + Eq + std::fmt::Debug + 'static {
    /// Every variant, in declaration order.
    const ALL: &'static [Self];
    /// Every variant's name, in the same order.
    const NAMES: &'static [&'static str];

    /// The variant's name.
    fn name(self) -> &'static str;

    /// The variant of this name.
    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.name() == name)
    }
}

/// A name that is none of an enum's (the error of `FromStr`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownName {
    pub name: String,
    pub known: &'static [&'static str],
}

impl std::fmt::Display for UnknownName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "'{}' is not one of {}", self.name, self.known.join(", "))
    }
}

impl std::error::Error for UnknownName {}

/// Declares a fieldless enum whose variants are named once, beside them:
///
/// ```ignore
/// named_enum! {
///     /// How the parent waits.
///     #[derive(Clone, Copy, Debug, PartialEq, Eq)]
///     pub enum Wait {
///         Join = "join",
///         Spin = "spin",
///     }
/// }
/// ```
///
/// gives `Wait::ALL` and `Wait::NAMES` (arrays in declaration order),
/// `as_str`, `from_name`, `Display`, `FromStr`, `Serialize` and
/// `Deserialize` (as the name), and [`Named`]. The derives are the caller's
/// (at least `Clone, Copy, Debug, PartialEq, Eq`); serde's are not needed.
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $Name:ident {
            $( $(#[$vmeta:meta])* $Variant:ident = $name:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $Name {
            $( $(#[$vmeta])* $Variant ),+
        }

        impl $Name {
            /// Every variant, in declaration order.
            pub const ALL: [$Name; [$($name),+].len()] = [$($Name::$Variant),+];
            /// Every variant's name, in declaration order.
            pub const NAMES: [&'static str; [$($name),+].len()] = [$($name),+];

            /// The variant's name: what users type and records store.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $Name::$Variant => $name ),+
                }
            }

            /// The variant of this name.
            pub fn from_name(name: &str) -> Option<$Name> {
                match name {
                    $( $name => Some($Name::$Variant), )+
                    _ => None,
                }
            }
        }

        impl $crate::model::names::Named for $Name {
            const ALL: &'static [$Name] = &$Name::ALL;
            const NAMES: &'static [&'static str] = &$Name::NAMES;

            fn name(self) -> &'static str {
                self.as_str()
            }

            fn from_name(name: &str) -> Option<$Name> {
                $Name::from_name(name)
            }
        }

        impl ::std::fmt::Display for $Name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $Name {
            type Err = $crate::model::names::UnknownName;

            fn from_str(s: &str) -> Result<$Name, Self::Err> {
                $Name::from_name(s).ok_or_else(|| $crate::model::names::UnknownName { name: s.to_string(), known: &$Name::NAMES })
            }
        }

        impl ::serde::Serialize for $Name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $Name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<$Name, D::Error> {
                let s = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(deserializer)?;
                $Name::from_name(&s).ok_or_else(|| <D::Error as ::serde::de::Error>::unknown_variant(&s, &$Name::NAMES))
            }
        }
    };
}
pub(crate) use named_enum;

#[cfg(test)]
mod tests {
    use super::*;

    named_enum! {
        /// A test enum.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        enum Shade {
            Light = "light",
            /// Documented variants keep their docs.
            DarkGrey = "dark-grey",
        }
    }

    #[test]
    fn one_list_gives_names_parser_display_and_serde() {
        assert_eq!(Shade::ALL, [Shade::Light, Shade::DarkGrey]);
        assert_eq!(Shade::NAMES, ["light", "dark-grey"]);
        assert_eq!(Shade::DarkGrey.as_str(), "dark-grey");
        assert_eq!(Shade::from_name("light"), Some(Shade::Light));
        assert_eq!(<Shade as Named>::from_name("nope"), None);
        assert_eq!(Shade::DarkGrey.to_string(), "dark-grey");
        assert_eq!("dark-grey".parse::<Shade>(), Ok(Shade::DarkGrey));
        assert_eq!("x".parse::<Shade>().unwrap_err().to_string(), "'x' is not one of light, dark-grey");
        assert_eq!(serde_json::to_string(&Shade::DarkGrey).unwrap(), "\"dark-grey\"");
        assert_eq!(serde_json::from_str::<Shade>("\"light\"").unwrap(), Shade::Light);
        assert_eq!(serde_json::from_value::<Shade>(serde_json::json!("dark-grey")).unwrap(), Shade::DarkGrey);
        let e = serde_json::from_str::<Shade>("\"dark\"").unwrap_err().to_string();
        assert!(e.contains("unknown variant `dark`, expected `light` or `dark-grey`"), "{e}");
    }
}
