//! The fault filesystem mounted for real: files written through it, fsynced or not,
//! a power cut, a failing disk, and no mount left behind.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use faultfs::{Failure, Mount};

fn mounted(dir: &Path) -> bool {
    let want = dir.canonicalize().unwrap_or(dir.to_path_buf());
    fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(1) == Some(want.to_str().unwrap()))
}

fn setup() -> (tempfile::TempDir, Mount) {
    let dir = tempfile::tempdir().unwrap();
    let mount = Mount::new(&dir.path().join("real"), &dir.path().join("data")).unwrap();
    (dir, mount)
}

#[test]
fn a_power_cut_drops_what_was_not_fsynced_and_keeps_the_rest() {
    let (dir, mount) = setup();
    let data = dir.path().join("data");
    fs::create_dir(data.join("p-0")).unwrap();
    let path = data.join("p-0").join("00.log");
    let mut f = File::create(&path).unwrap();
    f.write_all(b"one,two,").unwrap();
    f.sync_data().unwrap();
    f.write_all(b"three,").unwrap();
    f.write_at(b"TWO", 4).unwrap();
    // A checkpoint written whole and fsynced before its rename survives; one that
    // was not fsynced is empty after the cut (metadata is durable, data is not).
    fs::write(data.join("ok.tmp"), b"hw=6").unwrap();
    File::open(data.join("ok.tmp")).unwrap().sync_all().unwrap();
    fs::rename(data.join("ok.tmp"), data.join("ok")).unwrap();
    fs::write(data.join("lazy.tmp"), b"hw=9").unwrap();
    fs::rename(data.join("lazy.tmp"), data.join("lazy")).unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"one,TWO,three,");
    assert_eq!(mount.control().unsynced_bytes(), 6 + 3 + 4);
    drop(f);

    let mut lost = mount.control().power_cut(None).unwrap();
    lost.sort_by(|a, b| a.path.cmp(&b.path));
    let paths: Vec<_> = lost.iter().map(|l| l.path.to_str().unwrap()).collect();
    assert_eq!(paths, ["lazy", "p-0/00.log"]);
    assert_eq!(
        fs::read(&path).unwrap(),
        b"one,two,",
        "read through the mount"
    );
    assert_eq!(fs::metadata(&path).unwrap().len(), 8);
    assert_eq!(fs::read(data.join("ok")).unwrap(), b"hw=6");
    assert_eq!(fs::read(data.join("lazy")).unwrap(), b"");
    assert_eq!(mount.control().unsynced_bytes(), 0);

    let mountpoint = mount.mountpoint().to_path_buf();
    assert!(mounted(&mountpoint));
    mount.unmount().unwrap();
    assert!(!mounted(&mountpoint), "unmounted");
    assert_eq!(
        fs::read(dir.path().join("real/p-0/00.log")).unwrap(),
        b"one,two,"
    );
}

#[test]
fn a_torn_cut_keeps_a_prefix_of_the_last_write() {
    let (dir, mount) = setup();
    let path = dir.path().join("data").join("log");
    let f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .read(true)
        .open(&path)
        .unwrap();
    f.write_all_at(b"base", 0).unwrap();
    f.sync_data().unwrap();
    f.write_all_at(b"-first", 4).unwrap();
    f.write_all_at(b"-second", 10).unwrap();
    drop(f);
    let lost = mount.control().power_cut(Some(4)).unwrap();
    assert_eq!(lost[0].restored.torn, Some((10, 4)));
    // The earlier write is gone, so the kept prefix sits after a hole of zeros.
    assert_eq!(fs::read(&path).unwrap(), b"base\0\0\0\0\0\0-sec");
}

/// Writers and fsyncs on several files at once (the server answers them on several
/// threads, fsyncs unlocked): each file keeps exactly what its last fsync covered.
#[test]
fn concurrent_writers_each_keep_what_they_fsynced() {
    let (dir, mount) = setup();
    let data = dir.path().join("data");
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let path = data.join(format!("log-{w}"));
            std::thread::spawn(move || {
                let f = File::create(&path).unwrap();
                let mut synced = Vec::new();
                for i in 0..200u32 {
                    let record = format!("{w}:{i},");
                    f.write_all_at(record.as_bytes(), synced.len() as u64)
                        .unwrap();
                    synced.extend_from_slice(record.as_bytes());
                    if i % 10 == 9 {
                        f.sync_data().unwrap();
                    }
                }
                f.sync_data().unwrap();
                f.write_all_at(b"lost", synced.len() as u64).unwrap();
                (path, synced)
            })
        })
        .collect();
    let expected: Vec<_> = writers.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(mount.control().unsynced_bytes(), 4 * 4);
    let lost = mount.control().power_cut(None).unwrap();
    assert_eq!(lost.len(), 4);
    for (path, synced) in expected {
        assert_eq!(fs::read(&path).unwrap(), synced, "{}", path.display());
    }
}

#[test]
fn a_full_disk_and_a_failing_one_refuse_changes_until_healed() {
    let (dir, mount) = setup();
    let data = dir.path().join("data");
    let c = mount.control();
    let f = File::create(data.join("a")).unwrap();
    c.fail(Failure::Enospc, None);
    let e = f.write_at(b"x", 0).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
    assert_eq!(
        File::create(data.join("b")).unwrap_err().raw_os_error(),
        Some(libc::ENOSPC)
    );
    assert!(f.sync_data().is_err());
    f.set_len(0).unwrap();
    c.fail(Failure::Eio, None);
    assert_eq!(f.set_len(0).unwrap_err().raw_os_error(), Some(libc::EIO));
    assert_eq!(
        fs::remove_file(data.join("a")).unwrap_err().raw_os_error(),
        Some(libc::EIO)
    );
    c.fail(Failure::Eio, Some(std::time::Duration::ZERO));
    assert_eq!(c.failing(), None, "a failure whose time is up is over");
    c.fail(Failure::Eio, None);
    c.heal();
    f.write_at(b"y", 0).unwrap();
    f.sync_data().unwrap();
    assert_eq!(fs::read(data.join("a")).unwrap(), b"y");
    assert!(matches!(fs::read(data.join("b")), Err(e) if e.kind() == ErrorKind::NotFound));
}

#[test]
fn directories_list_and_rename_through_the_mount() {
    let (dir, _mount) = setup();
    let data = dir.path().join("data");
    fs::create_dir_all(data.join("t-0/sub")).unwrap();
    fs::write(data.join("t-0/sub/f"), b"f").unwrap();
    fs::rename(data.join("t-0"), data.join("t-0.deleted")).unwrap();
    assert_eq!(fs::read(data.join("t-0.deleted/sub/f")).unwrap(), b"f");
    let names: Vec<_> = fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["t-0.deleted"]);
    fs::remove_file(data.join("t-0.deleted/sub/f")).unwrap();
    fs::remove_dir_all(data.join("t-0.deleted")).unwrap();
    assert!(
        fs::read_dir(dir.path().join("real"))
            .unwrap()
            .next()
            .is_none()
    );
}

/// The mounting process is SIGKILLed (a harness killed mid-run): its watcher
/// unmounts the filesystem, whose server died with the process.
#[test]
fn a_mount_outlives_no_process_killed_while_it_held_it() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    if let Some(dir) = std::env::var_os("FAULTFS_TEST_HOLD") {
        let dir = Path::new(&dir);
        let _mount = Mount::new(&dir.join("real"), &dir.join("data")).unwrap();
        println!("mounted");
        std::thread::sleep(Duration::from_secs(120));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_mount_outlives_no_process_killed_while_it_held_it",
            "--nocapture",
        ])
        .env("FAULTFS_TEST_HOLD", dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("mounted") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the child ended");
    }
    let data = dir.path().join("data");
    assert!(mounted(&data));
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while mounted(&data) {
        assert!(
            Instant::now() < deadline,
            "still mounted after its process died"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// With the kernel's writeback asked for, what stayed unsynced long enough is on
/// disk: a power cut loses only what came after it.
#[test]
fn a_power_cut_spares_what_the_writeback_put_on_disk() {
    let (dir, mount) = setup();
    let control = mount.control();
    control.write_back_after(Some(std::time::Duration::from_millis(100)));
    let path = dir.path().join("data").join("log");
    let mut f = File::create(&path).unwrap();
    f.write_all(b"written-back,").unwrap();
    // The flusher wakes every 10 ms here; a loaded machine may delay it, so wait
    // until it has written everything back, bounded.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while control.unsynced_bytes() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "nothing written back in 30 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    control.write_back_after(None);
    f.write_all(b"dirty").unwrap();
    drop(f);
    control.power_cut(None).unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"written-back,");
}
