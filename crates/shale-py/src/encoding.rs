//! Keys and values as stored: `bytes` as they are in raw mode, else rocksdict's encoding of a
//! Python object (a type byte, then the bytes of a `bytes`, `str`, `int`, `float` or `bool`, or
//! a pickle of anything else).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyString};

use crate::errors::{Corruption, InvalidArgument};

// rocksdict's type bytes (checked byte for byte against rocksdict in tests/test_compat.py).
const T_BYTES: u8 = 1;
const T_STR: u8 = 2;
const T_INT: u8 = 3;
const T_FLOAT: u8 = 4;
const T_BOOL: u8 = 5;
const T_PICKLE: u8 = 6;

static PICKLE_DUMPS: GILOnceCell<PyObject> = GILOnceCell::new();
static PICKLE_LOADS: GILOnceCell<PyObject> = GILOnceCell::new();

fn pickle_fn<'py>(py: Python<'py>, cell: &'static GILOnceCell<PyObject>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    let f = cell.get_or_try_init(py, || -> PyResult<PyObject> {
        Ok(py.import("pickle")?.getattr(name)?.unbind())
    })?;
    Ok(f.bind(py).clone())
}

/// A Python object as the bytes stored: in raw mode it must be `bytes`.
pub(crate) fn encode(obj: &Bound<'_, PyAny>, raw: bool) -> PyResult<Vec<u8>> {
    encode_with(obj, raw, None)
}

/// [`encode`] with `dumps` (an Rdict's `set_dumps`) instead of `pickle.dumps` for the objects
/// that are not bytes, str, int, float or bool; it must return bytes.
pub(crate) fn encode_with(obj: &Bound<'_, PyAny>, raw: bool, dumps: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.downcast::<PyBytes>() {
        if raw {
            return Ok(b.as_bytes().to_vec());
        }
        return Ok(tagged(T_BYTES, b.as_bytes()));
    }
    if raw {
        return Err(PyTypeError::new_err(format!(
            "raw_mode: keys and values must be bytes, not {}",
            obj.get_type().name()?
        )));
    }
    if let Ok(s) = obj.downcast::<PyString>() {
        return Ok(tagged(T_STR, s.to_cow()?.as_bytes()));
    }
    if let Ok(b) = obj.downcast::<PyBool>() {
        return Ok(vec![T_BOOL, b.is_true() as u8]);
    }
    if let Ok(i) = obj.downcast::<PyInt>() {
        return Ok(tagged(T_INT, &int_bytes(i)?));
    }
    if let Ok(f) = obj.downcast::<PyFloat>() {
        return Ok(tagged(T_FLOAT, &f.value().to_be_bytes()));
    }
    let p = match dumps {
        Some(f) => f.call1((obj,))?,
        None => pickle_fn(obj.py(), &PICKLE_DUMPS, "dumps")?.call1((obj,))?,
    };
    let b = p
        .downcast::<PyBytes>()
        .map_err(|_| PyTypeError::new_err("dumps must return bytes"))?;
    Ok(tagged(T_PICKLE, b.as_bytes()))
}

fn tagged(t: u8, b: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(b.len() + 1);
    v.push(t);
    v.extend_from_slice(b);
    v
}

/// An int as the fewest big-endian two's-complement bytes (at least one), as rocksdict.
fn int_bytes(i: &Bound<'_, PyInt>) -> PyResult<Vec<u8>> {
    if let Ok(v) = i.extract::<i64>() {
        let b = v.to_be_bytes();
        let mut s = 0;
        while s < 7 && ((b[s] == 0 && b[s + 1] & 0x80 == 0) || (b[s] == 0xff && b[s + 1] & 0x80 != 0)) {
            s += 1;
        }
        return Ok(b[s..].to_vec());
    }
    let neg = i.lt(0)?;
    let magnitude = if neg {
        i.call_method0("__invert__")?
    } else {
        i.clone().into_any()
    };
    let bits: usize = magnitude.call_method0("bit_length")?.extract()?;
    let kw = PyDict::new(i.py());
    kw.set_item("signed", true)?;
    let b = i.call_method("to_bytes", ((bits + 8) / 8, "big"), Some(&kw))?;
    Ok(b.downcast::<PyBytes>()?.as_bytes().to_vec())
}

/// Stored bytes as the Python object they encode.
pub(crate) fn decode(py: Python<'_>, b: &[u8], raw: bool) -> PyResult<PyObject> {
    decode_with(py, b, raw, None)
}

/// [`decode`] with `loads` (an Rdict's `set_loads`) instead of `pickle.loads` for what
/// `dumps` encoded.
pub(crate) fn decode_with(py: Python<'_>, b: &[u8], raw: bool, loads: Option<&Bound<'_, PyAny>>) -> PyResult<PyObject> {
    if raw {
        return Ok(PyBytes::new(py, b).into_any().unbind());
    }
    let (t, rest) = match b.split_first() {
        Some((t, rest)) => (*t, rest),
        // An entity without a default column reads as an empty value: rocksdict gives "".
        None => return Ok(PyString::new(py, "").into_any().unbind()),
    };
    Ok(match t {
        T_BYTES => PyBytes::new(py, rest).into_any().unbind(),
        T_STR => PyString::new(
            py,
            std::str::from_utf8(rest).map_err(|e| Corruption::new_err(e.to_string()))?,
        )
        .into_any()
        .unbind(),
        T_INT if !rest.is_empty() && rest.len() <= 8 => {
            let fill = if rest[0] & 0x80 != 0 { 0xff } else { 0 };
            let mut a = [fill; 8];
            a[8 - rest.len()..].copy_from_slice(rest);
            i64::from_be_bytes(a).into_pyobject(py)?.into_any().unbind()
        }
        T_INT if !rest.is_empty() => {
            let kw = PyDict::new(py);
            kw.set_item("signed", true)?;
            py.get_type::<PyInt>()
                .call_method("from_bytes", (PyBytes::new(py, rest), "big"), Some(&kw))?
                .unbind()
        }
        T_FLOAT if rest.len() == 8 => {
            let mut a = [0; 8];
            a.copy_from_slice(rest);
            PyFloat::new(py, f64::from_be_bytes(a)).into_any().unbind()
        }
        T_BOOL if rest.len() == 1 => PyBool::new(py, rest[0] != 0).to_owned().into_any().unbind(),
        T_PICKLE => match loads {
            Some(f) => f.call1((PyBytes::new(py, rest),))?.unbind(),
            None => pickle_fn(py, &PICKLE_LOADS, "loads")?
                .call1((PyBytes::new(py, rest),))?
                .unbind(),
        },
        _ => {
            return Err(InvalidArgument::new_err(format!(
                "a stored value is not in rocksdict's encoding (type byte {t}; a raw_mode database?)"
            )))
        }
    })
}
