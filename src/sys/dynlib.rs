//! Libraries loaded at run time with dlopen: wulf links none of the
//! message-passing libraries it measures (PVM, UCX, the MPI adapter), so
//! a machine without one only loses its transports, each saying what to
//! install. A library loaded here is never unloaded: its threads, sockets
//! and signal handlers belong to it for the rest of the process.

use std::ffi::{c_void, CStr, CString};

/// A library loaded into this process (never closed).
#[derive(Debug, Clone, Copy)]
pub struct Library {
    handle: *mut c_void,
    /// What the library is, for error messages ("libucp").
    what: &'static str,
}

// SAFETY: the handle is an opaque token for dlsym, which is thread-safe;
// the library is never closed, so the handle stays valid everywhere.
unsafe impl Send for Library {}
// SAFETY: as above; nothing is mutated through the handle.
unsafe impl Sync for Library {}

/// The last dlopen or dlsym error of this thread.
fn dlerror() -> String {
    // SAFETY: dlerror returns NULL or a valid C string owned by libc.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown dlopen error".into()
    } else {
        // SAFETY: non-null, NUL-terminated.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

impl Library {
    /// Load the first of `names` (sonames or paths) that loads, with
    /// RTLD_GLOBAL (some libraries dlopen plug-ins of their own that expect
    /// its symbols in the global namespace). `what` names the library in
    /// errors; the error lists why each name failed.
    pub fn open_first(names: &[&str], what: &'static str) -> Result<Library, String> {
        let mut why = Vec::new();
        for name in names {
            let Ok(cname) = CString::new(*name) else {
                why.push(format!("{name:?} contains a NUL byte"));
                continue;
            };
            // SAFETY: a valid C string; the library's constructors are its own.
            let handle =
                unsafe { libc::dlopen(cname.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
            if handle.is_null() {
                why.push(dlerror());
                continue;
            }
            return Ok(Library { handle, what });
        }
        Err(why.join("; "))
    }

    /// The function `name` of this library or of a library it depends on,
    /// as the function pointer type `T`.
    ///
    /// # Safety
    /// `T` must be an `unsafe extern "C" fn` type matching the symbol's C
    /// signature.
    pub unsafe fn function<T: Copy>(&self, name: &str) -> Result<T, String> {
        let cname = CString::new(name).map_err(|_| format!("{name:?} contains a NUL byte"))?;
        // SAFETY: handle came from dlopen; dlsym only reads the name.
        let p = unsafe { libc::dlsym(self.handle, cname.as_ptr()) };
        if p.is_null() {
            return Err(format!("{} has no symbol {name}", self.what));
        }
        if std::mem::size_of::<T>() != std::mem::size_of::<*mut c_void>() {
            return Err(format!("{name}: not a function pointer type"));
        }
        // SAFETY: the caller vouches that T is the symbol's function
        // pointer type; the sizes are equal.
        Ok(unsafe { std::mem::transmute_copy::<*mut c_void, T>(&p) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_says_why_for_every_name() {
        let e = Library::open_first(&["libnosuch-wulf.so.9", "libnosuch2.so"], "x").unwrap_err();
        assert!(
            e.contains("libnosuch-wulf.so.9") && e.contains("libnosuch2.so"),
            "{e}"
        );
    }

    #[test]
    fn libc_functions_are_found_and_called() {
        let lib = Library::open_first(&["libc.so.6"], "libc").unwrap();
        // SAFETY: getpid's C signature.
        let getpid: unsafe extern "C" fn() -> libc::pid_t =
            unsafe { lib.function("getpid") }.unwrap();
        // SAFETY: a plain C call.
        assert_eq!(unsafe { getpid() } as u32, std::process::id());
        // SAFETY: as above (the call fails before any use).
        let missing = unsafe { lib.function::<unsafe extern "C" fn()>("wulf_no_such_fn") };
        assert!(missing
            .unwrap_err()
            .contains("libc has no symbol wulf_no_such_fn"));
    }
}
