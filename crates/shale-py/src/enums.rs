//! `py_enum!`: a frozen Python class standing for one value of a Rust enum, made by static
//! methods with rocksdict's names (`ChecksumType.xxh3()`, `DBRecoveryMode.point_in_time()`,
//! ...), compared by value, printed as the call that made it.

/// `py_enum!(Class, "doc", RustType, { method => Variant, ... })` defines `Class { v: RustType }`
/// with one static method per variant.
macro_rules! py_enum {
    ($(#[$doc:meta])* $name:ident, $t:ty, { $($(#[$mdoc:meta])* $method:ident => $variant:expr),* $(,)? }) => {
        $(#[$doc])*
        #[pyclass(module = "shale", frozen, eq)]
        #[derive(Clone, Copy, PartialEq)]
        pub(crate) struct $name {
            pub(crate) v: $t,
        }

        #[pymethods]
        impl $name {
            $(
                $(#[$mdoc])*
                #[staticmethod]
                fn $method() -> Self {
                    $name { v: $variant }
                }
            )*
            fn __repr__(&self) -> String {
                $(
                    if self.v == $variant {
                        return format!("{}.{}()", stringify!($name), stringify!($method));
                    }
                )*
                stringify!($name).to_string()
            }
        }
    };
}

pub(crate) use py_enum;
