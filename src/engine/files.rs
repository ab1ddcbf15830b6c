//! Facts about the files of a run, under the names the replay, the rerun, the reports and
//! `crashlab digest` import them by. They live with the store they belong to
//! (`engine::state`): the rows of `database-files.json` and a file's raw digest in
//! `state`, the SQLite logical digest and its content walk in `state::sqlite`. The driver,
//! explore and the audit reach a lab's state through `StateStore` only.

pub use crate::engine::state::sqlite::{
    logical_sha256, logical_sha256_conn, logical_sha256_of_copy, walk_content, Content,
    SIDE_SUFFIXES,
};
pub use crate::engine::state::{sha256_file, FileRow, END};
