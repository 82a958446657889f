// Microsoft SEAL per-operation timings at the parameters of `nectar bench he` (issue 4's
// "within 1.5x of SEAL" comparison, measured on the same machine). Not part of the Rust
// workspace; built by scripts/seal_bench/build.sh against a local SEAL 4.1 build.
//
// Parameters: N in {4096, 8192, 16384}, CoeffModulus::BFVDefault(N) (the last prime is SEAL's
// special prime), t = PlainModulus::Batching(N, 20) — the `seal-default` set of
// crates/bench/src/he.rs; at N = 8192 also the modulus sizes of its `bumblebee-olt` set. Each
// time is the median of repeated runs (at least 5, up to ~0.3 s per operation), microseconds,
// wall-clock and process CPU time, single thread (SEAL does not multi-thread). Output: one
// JSON object per line.
#include <seal/seal.h>
#include <seal/util/ntt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <time.h>
#include <vector>

using namespace seal;

// Process CPU time (all threads) in microseconds.
static double cpu_micros()
{
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

struct Timing
{
    double wall, cpu;
};

// Median wall-clock and median CPU time of repeated runs (same rule as nectar's bench_he), with
// an untimed `setup` before each run.
static Timing median_micros_setup(const std::function<void()> &setup, const std::function<void()> &f)
{
    std::vector<double> wall, cpu;
    auto start = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    while (wall.size() < 5 || (elapsed() < 0.3 && wall.size() < 200))
    {
        setup();
        double c = cpu_micros();
        auto t = std::chrono::steady_clock::now();
        f();
        wall.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count());
        cpu.push_back(cpu_micros() - c);
    }
    std::sort(wall.begin(), wall.end());
    std::sort(cpu.begin(), cpu.end());
    return { wall[wall.size() / 2], cpu[cpu.size() / 2] };
}

static Timing median_micros(const std::function<void()> &f)
{
    return median_micros_setup([] {}, f);
}

static std::string g_moduli;
static std::string g_params;
static size_t g_n;

static void emit(const std::string &op, Timing t, long long bytes = -1)
{
    std::printf(
        "{\"impl\":\"seal\",\"version\":\"%d.%d.%d\",\"n\":%zu,\"params\":\"%s\",\"moduli\":\"%s\","
        "\"op\":\"%s\",\"micros\":%.2f,\"cpu_micros\":%.2f",
        SEAL_VERSION_MAJOR, SEAL_VERSION_MINOR, SEAL_VERSION_PATCH, g_n, g_params.c_str(), g_moduli.c_str(), op.c_str(),
        t.wall, t.cpu);
    if (bytes >= 0)
        std::printf(",\"bytes\":%lld", bytes);
    std::printf("}\n");
    std::fflush(stdout);
}

// `olt`: the ciphertext modulus sizes of nectar's BumbleBee OLT preset, {59,55,49 | 49} at
// N = 8192 (SEAL cannot use its t = 2^64, so t is the same 20-bit batching prime: the
// automorphism, products, NTTs and modulus switching do not depend on t).
static void bench(size_t n, bool olt = false)
{
    EncryptionParameters parms(scheme_type::bfv);
    parms.set_poly_modulus_degree(n);
    parms.set_coeff_modulus(olt ? CoeffModulus::Create(n, { 59, 55, 49, 49 }) : CoeffModulus::BFVDefault(n));
    g_params = olt ? "bumblebee-olt" : "seal-default";
    parms.set_plain_modulus(PlainModulus::Batching(n, 20));
    SEALContext context(parms, true, sec_level_type::tc128);
    g_n = n;
    g_moduli.clear();
    auto &cm = parms.coeff_modulus();
    for (size_t i = 0; i < cm.size(); i++)
    {
        if (i + 1 == cm.size())
            g_moduli += "| ";
        g_moduli += std::to_string(cm[i].bit_count());
        if (i + 1 < cm.size())
            g_moduli += ",";
    }

    // NTT forward + inverse on one prime (SEAL's Harvey NTT, as used by its evaluator).
    auto key_data = context.key_context_data();
    std::mt19937_64 rng(42);
    for (size_t i = 0; i < cm.size(); i++)
    {
        const util::NTTTables &tables = key_data->small_ntt_tables()[i];
        std::vector<uint64_t> buf(n);
        for (auto &x : buf)
            x = rng() % cm[i].value();
        Timing t = median_micros([&] {
            util::ntt_negacyclic_harvey(buf.data(), tables);
            util::inverse_ntt_negacyclic_harvey(buf.data(), tables);
        });
        emit("ntt_fwd_inv_prime" + std::to_string(i) + "_" + std::to_string(cm[i].bit_count()) + "bit", t);
    }

    KeyGenerator keygen(context);
    SecretKey sk = keygen.secret_key();
    PublicKey pk;
    keygen.create_public_key(pk);
    GaloisKeys gk;
    keygen.create_galois_keys(std::vector<uint32_t>{ 3 }, gk);
    Encryptor enc_pk(context, pk);
    Encryptor enc_sk(context, sk);
    Decryptor dec(context, sk);
    Evaluator ev(context);

    uint64_t t_mod = parms.plain_modulus().value();
    Plaintext pt(n);
    for (size_t k = 0; k < n; k++)
        pt[k] = rng() % t_mod;

    Ciphertext ct;
    enc_pk.encrypt(pt, ct);

    emit("encrypt_sk", median_micros([&] {
             Serializable<Ciphertext> s = enc_sk.encrypt_symmetric(pt);
             (void)s;
         }));
    emit("encrypt_pk", median_micros([&] {
             Ciphertext c;
             enc_pk.encrypt(pt, c);
         }));
    // Serialized sizes: uncompressed (SEAL stores 8 bytes per residue) and, when SEAL was
    // built with zstd, compressed (SEAL's default mode; the zero high bits of the residues go).
    {
        Serializable<Ciphertext> s = enc_sk.encrypt_symmetric(pt);
        emit("ct_bytes_fresh_seeded", { 0, 0 }, (long long)s.save_size(compr_mode_type::none));
#ifdef SEAL_USE_ZSTD
        std::stringstream ss;
        emit("ct_bytes_fresh_seeded_zstd", { 0, 0 }, (long long)s.save(ss, compr_mode_type::zstd));
#endif
    }
    emit("decrypt", median_micros([&] {
             Plaintext out;
             dec.decrypt(ct, out);
         }));

    // Plaintext x ciphertext. Pre-transformed plaintext (SEAL allows it for BFV via
    // transform_to_ntt_inplace(plain, parms_id)), ciphertext already in NTT form.
    Plaintext pt_ntt;
    ev.transform_to_ntt(pt, ct.parms_id(), pt_ntt);
    Ciphertext ct_ntt;
    ev.transform_to_ntt(ct, ct_ntt);
    emit("mul_plain_ntt_form", median_micros([&] {
             Ciphertext out;
             ev.multiply_plain(ct_ntt, pt_ntt, out);
         }));
    // Same, ciphertext given in coefficient form: forward NTT of both polynomials + product
    // (nectar's mul_plain on a coefficient-form ciphertext; result in NTT form).
    emit("mul_plain_incl_ntt", median_micros([&] {
             Ciphertext out;
             ev.transform_to_ntt(ct, out);
             ev.multiply_plain_inplace(out, pt_ntt);
         }));
    // SEAL's default BFV path: both in coefficient form (transforms the plaintext too, and the
    // result back to coefficient form).
    emit("mul_plain_seal_default_coeff", median_micros([&] {
             Ciphertext out;
             ev.multiply_plain(ct, pt, out);
         }));
    emit("plain_to_ntt", median_micros([&] {
             Plaintext p;
             ev.transform_to_ntt(pt, ct.parms_id(), p);
         }));
    // Automorphism X -> X^3 with key switching (BFV: coefficient-form input).
    emit("automorphism_keyswitch", median_micros([&] {
             Ciphertext out;
             ev.apply_galois(ct, 3, gk, out);
         }));
    // In place on a fresh copy (the copy untimed), as nectar's `mod_switch_down`.
    Ciphertext fresh;
    emit("mod_switch_down", median_micros_setup([&] { fresh = ct; }, [&] { ev.mod_switch_to_next_inplace(fresh); }));
    emit("ct_bytes_full", { 0, 0 }, (long long)ct.save_size(compr_mode_type::none));
    Ciphertext low = ct;
    while (context.get_context_data(low.parms_id())->next_context_data())
        ev.mod_switch_to_next_inplace(low);
    emit("ct_bytes_one_prime", { 0, 0 }, (long long)low.save_size(compr_mode_type::none));
#ifdef SEAL_USE_ZSTD
    {
        std::stringstream s1, s2;
        emit("ct_bytes_full_zstd", { 0, 0 }, (long long)ct.save(s1, compr_mode_type::zstd));
        emit("ct_bytes_one_prime_zstd", { 0, 0 }, (long long)low.save(s2, compr_mode_type::zstd));
    }
#endif
}

int main(int argc, char **argv)
{
    std::vector<size_t> ns;
    for (int i = 1; i < argc; i++)
        ns.push_back(std::strtoul(argv[i], nullptr, 10));
    if (ns.empty())
        ns = { 4096, 8192, 16384 };
    for (size_t n : ns)
    {
        bench(n);
        if (n == 8192)
            bench(n, true);
    }
    return 0;
}
