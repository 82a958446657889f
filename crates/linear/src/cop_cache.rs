//! COP's key lifetime and the client's cache of encrypted weights (Nimbus §3.2, App. F.3:
//! the weights' encryption amortised over queries; issue 47 item 1).
//!
//! - **The server's key** ([`server_key`]): one per server process, made by the first COP
//!   session and shared by the later ones, replaced by a fresh key once it is
//!   [`KEY_MAX_AGE`] old or has served [`KEY_MAX_SESSIONS`] sessions (a session keeps the key it
//!   started with). Nothing is flooded under it (every COP response is masked uniformly over
//!   `R_q`), so no statistical budget bounds it; the age and session bounds are policy, and
//!   they bound how long a client's cached encryptions can be used.
//! - **The client's cache** ([`ClientCache`]): one directory per server key (named by the key's
//!   digest) under the directory set by [`set_client_cache_dir`] (the app: `cop/` in nectar's
//!   cache; unset, nothing is cached). An entry holds one weight's ciphertexts as received,
//!   with the digest the server computed over the key, the weight's name, shape, windows and
//!   values ([`weight_digest`]) and the file's size and SHA-256. At session setup the client
//!   checks every entry's file size, drops (and deletes) the ones that fail — a truncated file —
//!   with a one-line warning each, and sends the server the rest ([`Entry`] list); the server
//!   sends a weight again unless the client listed it with the digest the server computes now.
//!   A file whose SHA-256 no longer matches as it is loaded (changed in place) fails that query
//!   with a one-line error and is deleted, so the next session transfers it again: never a wrong
//!   answer. Clients sharing a cache (concurrent runs) do not disturb each other: files are
//!   named by their content and renamed into place, and each client reads the files it opened
//!   at setup ([`ClientCache`]'s `Cached`).

use crate::krdy::Windows;
use crate::LinearError;
use nectar_he::{GaloisKeys, Params, PublicKey, SecretKey};
use nectar_math::Prg;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Longest a server's COP key serves new sessions (POLICY).
pub const KEY_MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// Most sessions a server's COP key serves (POLICY).
pub const KEY_MAX_SESSIONS: u64 = 1 << 20;
/// Most entries a client may list at setup (bounds the server's parsing; AGREEMENT).
pub const MAX_INVENTORY: usize = 1 << 14;
/// Key directories a client keeps (the oldest beyond are deleted as a new one is made; LOCAL).
pub const MAX_KEY_DIRS: usize = 4;

/// A 32-byte SHA-256 digest.
pub type Hash = [u8; 32];

/// The server's COP key pair and Galois keys for this process.
pub struct ServerKey {
    pub(crate) params: Params,
    pub(crate) sk: SecretKey,
    pub(crate) pk: PublicKey,
    pub(crate) gk: GaloisKeys,
    /// [`key_digest`] of `pk` under `params`.
    pub digest: Hash,
    born: Instant,
    sessions: AtomicU64,
}

static SERVER_KEY: Mutex<Option<Arc<ServerKey>>> = Mutex::new(None);

/// The digest naming a server key: SHA-256 over the parameters' fingerprint and the public
/// key's wire bytes.
pub fn key_digest(params: &Params, pk: &PublicKey) -> Result<Hash, LinearError> {
    let mut h = Sha256::new();
    h.update(b"nectar cop key v1");
    h.update(params.fingerprint().to_le_bytes());
    h.update(crate::wire::keys_to_bytes(params, pk, None)?);
    Ok(h.finalize().into())
}

/// The server's key for a new COP session (see the module docs): this process's current key,
/// or a fresh one (from `prg`) when there is none, it is too old or too used, or it was made
/// for other parameters.
pub fn server_key(params: &Params, prg: &mut Prg) -> Result<Arc<ServerKey>, LinearError> {
    let mut slot = SERVER_KEY.lock().map_err(|_| LinearError::BadParams("COP server key lock poisoned".into()))?;
    let fresh = match slot.as_ref() {
        Some(k) => k.params.fingerprint() != params.fingerprint() || k.born.elapsed() >= KEY_MAX_AGE || k.sessions.load(Ordering::Relaxed) >= KEY_MAX_SESSIONS,
        None => true,
    };
    if fresh {
        let sk = SecretKey::generate(params, prg);
        let pk = sk.public_key(params, prg);
        let gk = sk.galois_keys(params, &nectar_he::keys::interleave_galois_elements(params.n()), prg)?;
        let digest = key_digest(params, &pk)?;
        *slot = Some(Arc::new(ServerKey { params: params.clone(), sk, pk, gk, digest, born: Instant::now(), sessions: AtomicU64::new(0) }));
    }
    let k = slot.clone().ok_or_else(|| LinearError::BadParams("no COP server key".into()))?;
    k.sessions.fetch_add(1, Ordering::Relaxed);
    Ok(k)
}

/// The digest a server computes for one weight under its key: SHA-256 over the key digest, the
/// weight's name, shape, windows and values (ring elements, little-endian). A cached entry is
/// used only under the same digest.
pub fn weight_digest(key: &Hash, name: &str, (m, n): (usize, usize), w: Windows, values: &[u64]) -> Hash {
    let mut h = Sha256::new();
    h.update(b"nectar cop weight v1");
    h.update(key);
    h.update((name.len() as u64).to_le_bytes());
    h.update(name.as_bytes());
    for v in [m, n, w.kw, w.mw, w.nw] {
        h.update((v as u64).to_le_bytes());
    }
    for chunk in values.chunks(1 << 16) {
        let bytes: Vec<u8> = chunk.iter().flat_map(|v| v.to_le_bytes()).collect();
        h.update(&bytes);
    }
    h.finalize().into()
}

/// One cached weight as the client lists it at setup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub m: usize,
    pub n: usize,
    pub windows: Windows,
    pub digest: Hash,
}

fn hex(h: &Hash) -> String {
    h.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Hash> {
    if s.len() != 64 {
        return None;
    }
    let mut h = [0u8; 32];
    for (i, b) in h.iter_mut().enumerate() {
        *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(h)
}

fn entry_json(e: &Entry) -> serde_json::Value {
    serde_json::json!({ "name": e.name, "m": e.m, "n": e.n, "windows": [e.windows.kw, e.windows.mw, e.windows.nw], "digest": hex(&e.digest) })
}

fn entry_from_json(v: &serde_json::Value) -> Option<Entry> {
    let w: Vec<usize> = v.get("windows")?.as_array()?.iter().map(|x| x.as_u64().map(|x| x as usize)).collect::<Option<_>>()?;
    let [kw, mw, nw] = w[..] else { return None };
    Some(Entry {
        name: v.get("name")?.as_str()?.to_string(),
        m: v.get("m")?.as_u64()? as usize,
        n: v.get("n")?.as_u64()? as usize,
        windows: Windows { kw, mw, nw },
        digest: unhex(v.get("digest")?.as_str()?)?,
    })
}

/// The client's list of cached entries, as sent at setup (JSON).
pub fn inventory_to_bytes(entries: &[Entry]) -> Vec<u8> {
    serde_json::Value::Array(entries.iter().map(entry_json).collect()).to_string().into_bytes()
}

/// The server's parse of a client's list (at most [`MAX_INVENTORY`] entries; anything
/// malformed is an error).
pub fn inventory_from_bytes(b: &[u8]) -> Result<Vec<Entry>, LinearError> {
    let v: serde_json::Value = serde_json::from_slice(b).map_err(|e| LinearError::Malformed(format!("COP inventory: {e}")))?;
    let a = v.as_array().ok_or_else(|| LinearError::Malformed("COP inventory: not a list".into()))?;
    if a.len() > MAX_INVENTORY {
        return Err(LinearError::Malformed(format!("COP inventory of {} entries (at most {MAX_INVENTORY})", a.len())));
    }
    a.iter().map(|e| entry_from_json(e).ok_or_else(|| LinearError::Malformed("COP inventory: a malformed entry".into()))).collect()
}

static CLIENT_CACHE_DIR: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Where clients of this process cache encrypted weights (`None`: nowhere, the default).
pub fn set_client_cache_dir(dir: Option<PathBuf>) {
    if let Ok(mut d) = CLIENT_CACHE_DIR.lock() {
        *d = dir;
    }
}

/// The directory set by [`set_client_cache_dir`].
pub fn client_cache_dir() -> Option<PathBuf> {
    CLIENT_CACHE_DIR.lock().ok().and_then(|d| d.clone())
}

/// One server key's directory of cached weights on the client (see the module docs).
pub struct ClientCache {
    dir: PathBuf,
    /// Entries whose files had their recorded size at setup, each with its file open.
    entries: Vec<Cached>,
    /// One line per entry dropped at setup.
    pub problems: Vec<String>,
}

/// One cached weight: its entry, where its ciphertexts lie, its file's name and the file, open
/// since setup.
///
/// Several clients may share one cache (concurrent `nectar infer` runs): a file is written
/// under a unique temporary name and renamed into place, and is named by its content (the
/// weight's digest and a digest of its parts' hashes), so one client's transfer never replaces
/// the file another client listed; and each client reads through the handle it opened at
/// setup, so a file another client deletes (a newer copy of the same weight) stays readable to
/// it until its session ends.
struct Cached {
    e: Entry,
    parts: Parts,
    file: String,
    handle: std::fs::File,
}

fn file_hash(bytes: &[u8]) -> Hash {
    Sha256::digest(bytes).into()
}

/// The file name of an entry with `digest` and part hashes `hashes`.
fn file_name(digest: &Hash, hashes: &[Hash]) -> String {
    let content = hex(&Sha256::digest(hashes.concat()).into());
    format!("{}-{}.cts", hex(digest), &content[..16])
}

/// A name no other writer uses for a temporary next to `path`.
fn temp_path(path: &Path) -> PathBuf {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(format!(".{}.{}.{nanos}.tmp", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed)));
    path.with_file_name(name)
}

/// `bytes` written to `path` through a unique temporary and a rename (readers see the old file
/// or the whole new one).
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = temp_path(path);
    let r = std::fs::write(&tmp, bytes).and_then(|_| std::fs::rename(&tmp, path));
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

/// Where an entry's ciphertexts lie in its file: each one's length and SHA-256, in order, and
/// the offsets they start at (`offsets[i]`; the last entry is the file's size).
#[derive(Clone, Debug)]
struct Parts {
    lens: Vec<u64>,
    hashes: Vec<Hash>,
    offsets: Vec<u64>,
}

impl Parts {
    fn new(lens: Vec<u64>, hashes: Vec<Hash>) -> Option<Parts> {
        let offsets = std::iter::once(0).chain(lens.iter().scan(0u64, |at, &l| {
            *at = at.checked_add(l)?;
            Some(*at)
        }));
        let offsets: Vec<u64> = offsets.collect();
        (lens.len() == hashes.len() && offsets.len() == lens.len() + 1).then_some(Parts { lens, hashes, offsets })
    }
    fn size(&self) -> u64 {
        self.offsets.last().copied().unwrap_or(0)
    }
}

fn parts_from_json(v: &serde_json::Value) -> Option<Parts> {
    let lens: Vec<u64> = v.get("lens")?.as_array()?.iter().map(|x| x.as_u64()).collect::<Option<_>>()?;
    let hashes: Vec<Hash> = v.get("hashes")?.as_array()?.iter().map(|x| x.as_str().and_then(unhex)).collect::<Option<_>>()?;
    Parts::new(lens, hashes)
}

/// An index entry's file name: the one it records (a plain name of this directory), else the
/// content name.
fn file_from_json(v: &serde_json::Value, e: &Entry, parts: &Parts) -> Option<String> {
    match v.get("file") {
        Some(f) => {
            let f = f.as_str()?;
            let plain = !f.is_empty() && f.ends_with(".cts") && f.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.') && !f.starts_with('.');
            plain.then(|| f.to_string())
        }
        None => Some(file_name(&e.digest, &parts.hashes)),
    }
}

/// The JSON index line of a cached entry.
fn cached_json(e: &Entry, p: &Parts, file: &str) -> serde_json::Value {
    let mut v = entry_json(e);
    v["lens"] = serde_json::json!(p.lens);
    v["hashes"] = serde_json::Value::Array(p.hashes.iter().map(|h| serde_json::Value::String(hex(h))).collect());
    v["file"] = serde_json::Value::String(file.to_string());
    v
}

impl ClientCache {
    /// Opens (or makes) the directory of server key `key` under `root` and checks every entry's
    /// file against the size it was written with (a truncated file is dropped here; each
    /// ciphertext's SHA-256 is checked as it is read, [`ClientCache::load`]), keeping each file
    /// open for the session. Never fails: what cannot be read is dropped and named in
    /// [`ClientCache::problems`].
    pub fn open(root: &Path, key: &Hash) -> ClientCache {
        let dir = root.join(hex(key));
        let mut problems = Vec::new();
        if !dir.is_dir() {
            if let Err(e) = std::fs::create_dir_all(&dir) {
                problems.push(format!("cannot make {}: {e}", dir.display()));
            }
            prune_key_dirs(root, &dir);
        }
        let mut entries = Vec::new();
        let index = dir.join("index.json");
        if let Ok(text) = std::fs::read(&index) {
            match serde_json::from_slice::<serde_json::Value>(&text) {
                Ok(serde_json::Value::Array(a)) => {
                    for v in &a {
                        let parsed = entry_from_json(v).zip(parts_from_json(v));
                        let Some((e, parts, file)) = parsed.and_then(|(e, p)| file_from_json(v, &e, &p).map(|f| (e, p, f))) else {
                            problems.push(format!("{}: a malformed entry, dropped", index.display()));
                            continue;
                        };
                        let path = dir.join(&file);
                        match std::fs::File::open(&path).and_then(|h| h.metadata().map(|md| (h, md.len()))) {
                            Ok((handle, len)) if len == parts.size() => entries.push(Cached { e, parts, file, handle }),
                            Ok(_) => {
                                problems.push(format!(
                                    "{}: not the size it was written with (truncated or changed), deleted; the weight `{}` will be sent again",
                                    path.display(),
                                    e.name
                                ));
                                let _ = std::fs::remove_file(&path);
                            }
                            Err(err) => problems.push(format!("{}: {err}; the weight `{}` will be sent again", path.display(), e.name)),
                        }
                    }
                }
                _ => problems.push(format!("{}: not a list of entries, ignored; every weight will be sent again", index.display())),
            }
        }
        let mut c = ClientCache { dir, entries, problems };
        c.write_index(&[]);
        c
    }

    /// The entries to list at setup.
    pub fn inventory(&self) -> Vec<Entry> {
        self.entries.iter().map(|c| c.e.clone()).collect()
    }

    /// The serialized ciphertexts `idx` (every one for `None`) of the entry with `digest`, each
    /// checked against its SHA-256, read through the file opened at setup; a short or changed
    /// file is deleted from the cache and is an error (the query fails, the next session
    /// transfers the weight again).
    pub fn load(&mut self, digest: &Hash, idx: Option<&[usize]>) -> Result<Vec<Vec<u8>>, LinearError> {
        use std::io::{Read, Seek, SeekFrom};
        let i = self.entries.iter().position(|c| c.e.digest == *digest).ok_or_else(|| {
            LinearError::Malformed(format!("the server named cached weight {} that this client did not list", hex(digest)))
        })?;
        let c = &self.entries[i];
        let all: Vec<usize> = (0..c.parts.lens.len()).collect();
        let idx = idx.unwrap_or(&all);
        let read = || -> Option<Vec<Vec<u8>>> {
            let mut f = &c.handle;
            let mut out = Vec::with_capacity(idx.len());
            for &j in idx {
                let len = usize::try_from(*c.parts.lens.get(j)?).ok()?;
                f.seek(SeekFrom::Start(c.parts.offsets[j])).ok()?;
                let mut b = vec![0u8; len];
                f.read_exact(&mut b).ok()?;
                if file_hash(&b) != c.parts.hashes[j] {
                    return None;
                }
                out.push(b);
            }
            Some(out)
        };
        match read() {
            Some(p) => Ok(p),
            None => {
                let c = self.entries.remove(i);
                let path = self.dir.join(&c.file);
                let _ = std::fs::remove_file(&path);
                self.write_index(std::slice::from_ref(&c.file));
                Err(LinearError::Unsupported(format!(
                    "COP cache: {} of weight `{}` changed since setup; deleted, reconnect for a fresh transfer",
                    path.display(),
                    c.e.name
                )))
            }
        }
    }

    /// Stores a weight's serialized ciphertexts (replacing an entry of the same name and
    /// shape, this client's or another's).
    pub fn store(&mut self, e: Entry, parts: &[Vec<u8>]) -> Result<(), LinearError> {
        let p = Parts::new(parts.iter().map(|b| b.len() as u64).collect(), parts.iter().map(|b| file_hash(b)).collect())
            .ok_or_else(|| LinearError::BadShape("COP cache: parts too large".into()))?;
        let file = file_name(&e.digest, &p.hashes);
        let path = self.dir.join(&file);
        let err = |err: std::io::Error| LinearError::Unsupported(format!("COP cache: cannot write {}: {err}", path.display()));
        write_atomic(&path, &parts.concat()).map_err(err)?;
        let handle = std::fs::File::open(&path).map_err(err)?;
        let same = |o: &Entry| o.name == e.name && (o.m, o.n) == (e.m, e.n);
        let mut gone: Vec<String> = Vec::new();
        for old in self.entries.iter().filter(|c| same(&c.e) && c.file != file) {
            let _ = std::fs::remove_file(self.dir.join(&old.file));
            gone.push(old.file.clone());
        }
        self.entries.retain(|c| !same(&c.e));
        self.entries.push(Cached { e, parts: p, file, handle });
        self.write_index(&gone);
        Ok(())
    }

    /// Writes the index: this client's entries whose files are still there, and those other
    /// clients added since (read back from the index on disk, kept while their files exist and
    /// no listed entry of this client has their name and shape), except the files in `gone`. Another client's index written
    /// between our read and our rename is lost (its weights travel again next time), never
    /// wrong: every entry names its own file.
    fn write_index(&mut self, gone: &[String]) {
        let index = self.dir.join("index.json");
        // ours whose file is still there (another client may have replaced it by a newer copy)
        let listed: Vec<&Cached> = self.entries.iter().filter(|c| self.dir.join(&c.file).is_file()).collect();
        let mut a: Vec<serde_json::Value> = listed.iter().map(|c| cached_json(&c.e, &c.parts, &c.file)).collect();
        if let Ok(serde_json::Value::Array(disk)) = std::fs::read(&index).map_err(|_| ()).and_then(|t| serde_json::from_slice(&t).map_err(|_| ())) {
            for v in disk {
                let Some((e, p)) = entry_from_json(&v).zip(parts_from_json(&v)) else { continue };
                let Some(file) = file_from_json(&v, &e, &p) else { continue };
                let ours = listed.iter().any(|c| c.e.name == e.name && (c.e.m, c.e.n) == (e.m, e.n));
                if ours || gone.contains(&file) || !self.dir.join(&file).is_file() {
                    continue;
                }
                a.push(cached_json(&e, &p, &file));
            }
        }
        if let Err(e) = write_atomic(&index, serde_json::Value::Array(a).to_string().as_bytes()) {
            self.problems.push(format!("cannot write {}: {e}", index.display()));
        }
    }
}

/// Keeps the newest [`MAX_KEY_DIRS`] key directories under `root` (besides `keep`).
fn prune_key_dirs(root: &Path, keep: &Path) {
    let Ok(rd) = std::fs::read_dir(root) else { return };
    let mut dirs: Vec<(std::time::SystemTime, PathBuf)> = rd
        .flatten()
        .filter(|d| d.path() != keep && d.path().is_dir() && d.file_name().to_str().is_some_and(|n| n.len() == 64 && unhex(n).is_some()))
        .filter_map(|d| Some((d.metadata().ok()?.modified().ok()?, d.path())))
        .collect();
    dirs.sort();
    let excess = (dirs.len() + 1).saturating_sub(MAX_KEY_DIRS);
    for (_, d) in dirs.into_iter().take(excess) {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, d: u8) -> Entry {
        Entry { name: name.into(), m: 4, n: 3, windows: Windows { kw: 1, mw: 2, nw: 3 }, digest: [d; 32] }
    }

    #[test]
    fn inventory_round_trips_and_bounds() {
        let e = vec![entry("a", 1), entry("b+c", 2)];
        assert_eq!(inventory_from_bytes(&inventory_to_bytes(&e)).unwrap(), e);
        assert!(inventory_from_bytes(b"{").is_err());
        assert!(inventory_from_bytes(br#"[{"name":"a"}]"#).is_err());
        assert!(inventory_from_bytes(b"[]").unwrap().is_empty());
    }

    #[test]
    fn cache_keeps_good_entries_and_drops_bad_ones() {
        let root = std::env::temp_dir().join(format!("nectar-cop-cache-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let key = [7u8; 32];
        let mut c = ClientCache::open(&root, &key);
        assert!(c.inventory().is_empty() && c.problems.is_empty(), "{:?}", c.problems);
        c.store(entry("w1", 1), &[vec![1, 2, 3]]).unwrap();
        c.store(entry("w2", 2), &[vec![4; 10], vec![5], vec![6, 7]]).unwrap();
        // Reopened: both entries, their parts as stored, all or some.
        let mut c = ClientCache::open(&root, &key);
        assert_eq!(c.inventory().len(), 2);
        assert_eq!(c.load(&[2; 32], None).unwrap(), vec![vec![4; 10], vec![5], vec![6, 7]]);
        assert_eq!(c.load(&[2; 32], Some(&[2, 0, 2])).unwrap(), vec![vec![6, 7], vec![4; 10], vec![6, 7]]);
        // Truncate one file: dropped at the next open, with a one-line problem.
        let p = root.join(hex(&key)).join(file_name(&[1; 32], &[file_hash(&[1, 2, 3])]));
        let b = std::fs::read(&p).unwrap();
        std::fs::write(&p, &b[..b.len() - 1]).unwrap();
        let mut c = ClientCache::open(&root, &key);
        assert_eq!(c.inventory(), vec![entry("w2", 2)]);
        assert_eq!(c.problems.len(), 1, "{:?}", c.problems);
        assert!(!c.problems[0].contains('\n'));
        // A file changed in place (same size) fails its load, and the entry goes.
        let p2 = root.join(hex(&key)).join(file_name(&[2; 32], &[file_hash(&[4; 10]), file_hash(&[5]), file_hash(&[6, 7])]));
        let mut b2 = std::fs::read(&p2).unwrap();
        b2[10] ^= 1; // the second part, `[5]`
        std::fs::write(&p2, &b2).unwrap();
        let e = c.load(&[2; 32], Some(&[1])).unwrap_err().to_string();
        assert!(!e.contains('\n'), "{e}");
        assert!(c.inventory().is_empty());
        // A name the client never listed, or a part it does not have, is an error, not a panic.
        assert!(c.load(&[3; 32], None).is_err());
        c.store(entry("w3", 3), &[vec![1]]).unwrap();
        assert!(c.load(&[3; 32], Some(&[5])).is_err());
        // A garbled index: everything is sent again.
        std::fs::write(root.join(hex(&key)).join("index.json"), b"{oops").unwrap();
        let c = ClientCache::open(&root, &key);
        assert!(c.inventory().is_empty() && c.problems.len() == 1);
        let _ = std::fs::remove_dir_all(&root);
    }

    /// Clients sharing one cache: a second client's transfer of the same weight (other
    /// ciphertexts) never breaks a first client that listed the earlier copy, and entries that
    /// clients add concurrently all stay in the index.
    #[test]
    fn clients_sharing_a_cache_do_not_disturb_each_other() {
        let root = std::env::temp_dir().join(format!("nectar-cop-cache-shared-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let key = [9u8; 32];
        let (mut a, mut b) = (ClientCache::open(&root, &key), ClientCache::open(&root, &key));
        a.store(entry("w", 1), &[vec![1; 8], vec![2; 8]]).unwrap();
        let mut c = ClientCache::open(&root, &key);
        assert_eq!(c.inventory(), vec![entry("w", 1)]);
        // b received the same weight in its own session: other ciphertexts, a file of its own;
        // it replaces a's entry (and deletes a's file), but c reads the copy it opened
        b.store(entry("w", 1), &[vec![3; 8], vec![4; 8]]).unwrap();
        assert_eq!(c.load(&[1; 32], Some(&[1])).unwrap(), vec![vec![2; 8]]);
        let mut d = ClientCache::open(&root, &key);
        assert_eq!(d.load(&[1; 32], None).unwrap(), vec![vec![3; 8], vec![4; 8]]);
        // two clients each add a weight: the index keeps both
        a.store(entry("x", 2), &[vec![5]]).unwrap();
        d.store(entry("y", 3), &[vec![6]]).unwrap();
        let e = ClientCache::open(&root, &key);
        let names: Vec<String> = e.inventory().into_iter().map(|e| e.name).collect();
        for n in ["w", "x", "y"] {
            assert!(names.iter().any(|m| m == n), "{n} in {names:?}");
        }
        assert!(e.problems.is_empty(), "a wrote last but does not list its deleted copy of w: {:?}", e.problems);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn the_server_key_is_shared_then_renewed_for_other_parameters() {
        let mut prg = Prg::new([1; 16]);
        let p = Params::nectar_olt_narrow();
        let a = server_key(&p, &mut prg).unwrap();
        let b = server_key(&p, &mut prg).unwrap();
        assert_eq!(a.digest, b.digest);
        assert_eq!(a.digest, key_digest(&p, &a.pk).unwrap());
        let c = server_key(&Params::bumblebee_olt(), &mut prg).unwrap();
        assert_ne!(a.digest, c.digest);
    }
}
