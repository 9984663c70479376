//! SOPS's Shamir secret sharing (`shamir/shamir.go`, HashiCorp Vault's): with several key
//! groups each wraps one share of the data key; a share is the polynomial values over GF(2^8)
//! followed by its x coordinate, and the key is the polynomials' value at 0.

use zeroize::Zeroizing;

/// Multiplication in GF(2^8) with the AES polynomial (0x11b).
fn mult(a: u8, b: u8) -> u8 {
    let mut accumulator: u8 = 0;
    for i in (0..8).rev() {
        let bit = (b >> i) & 1;
        let a_or_zero = 0u8.wrapping_sub(bit) & a;
        let reduce = 0u8.wrapping_sub(accumulator >> 7) & 0x1b;
        accumulator = a_or_zero ^ (reduce ^ accumulator.wrapping_add(accumulator));
    }
    accumulator
}

/// a^254, the inverse of a (a ≠ 0).
fn inverse(a: u8) -> u8 {
    let mut b = mult(a, a);
    let mut c = mult(a, b);
    b = mult(c, c);
    b = mult(b, b);
    c = mult(b, c);
    b = mult(b, b);
    b = mult(b, b);
    b = mult(b, c);
    b = mult(b, b);
    b = mult(a, b);
    mult(b, b)
}

/// Lagrange interpolation of the samples at 0.
fn at_zero(xs: &[u8], ys: &[u8]) -> u8 {
    let mut result = 0;
    for i in 0..xs.len() {
        let mut basis = 1;
        for j in 0..xs.len() {
            if i != j {
                // (0 + x_j) / (x_i + x_j); addition is xor.
                basis = mult(basis, mult(xs[j], inverse(xs[i] ^ xs[j])));
            }
        }
        result ^= mult(ys[i], basis);
    }
    result
}

/// The secret the shares were split from (`shamir.Combine`).
pub(crate) fn combine(shares: &[Zeroizing<Vec<u8>>]) -> Result<Zeroizing<Vec<u8>>, &'static str> {
    if shares.len() < 2 {
        return Err("less than two parts cannot be used to reconstruct the secret");
    }
    let len = shares[0].len();
    if len < 2 {
        return Err("parts must be at least two bytes");
    }
    if shares.iter().any(|s| s.len() != len) {
        return Err("all parts must be the same length");
    }
    let xs: Vec<u8> = shares.iter().map(|s| s[len - 1]).collect();
    if (1..xs.len()).any(|i| xs[..i].contains(&xs[i])) {
        return Err("duplicate part detected");
    }
    let mut secret = Zeroizing::new(vec![0u8; len - 1]);
    let mut ys = Zeroizing::new(vec![0u8; shares.len()]);
    for (index, byte) in secret.iter_mut().enumerate() {
        for (y, share) in ys.iter_mut().zip(shares) {
            *y = share[index];
        }
        *byte = at_zero(&xs, &ys);
    }
    Ok(secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits as `shamir.Split` does, with fixed coefficients.
    fn split(secret: &[u8], parts: u8, coefficients: &[u8]) -> Vec<Zeroizing<Vec<u8>>> {
        (1..=parts)
            .map(|x| {
                let mut share: Vec<u8> = secret
                    .iter()
                    .map(|&intercept| {
                        // intercept + c1·x + c2·x² …, by Horner's rule from the top.
                        let mut out = 0;
                        for &c in coefficients.iter().rev() {
                            out = mult(out, x) ^ c;
                        }
                        mult(out, x) ^ intercept
                    })
                    .collect();
                share.push(x);
                Zeroizing::new(share)
            })
            .collect()
    }

    #[test]
    fn field_arithmetic() {
        assert_eq!(mult(0x57, 0x83), 0xc1, "FIPS-197's example");
        for a in 1..=255u8 {
            assert_eq!(mult(a, inverse(a)), 1, "{a}");
        }
    }

    #[test]
    fn any_threshold_of_shares_gives_the_secret_back() {
        let secret = b"0123456789abcdef0123456789abcdef";
        let shares = split(secret, 3, &[0x42, 0x17]);
        for pick in [[0, 1, 2].as_slice(), &[0, 2, 1], &[2, 1, 0]] {
            let chosen: Vec<_> = pick.iter().map(|&i| shares[i].clone()).collect();
            assert_eq!(combine(&chosen).unwrap().as_slice(), secret);
        }
        let two = split(secret, 2, &[0x99]);
        assert_eq!(combine(&two).unwrap().as_slice(), secret);
        assert_eq!(combine(&two[..1]), Err("less than two parts cannot be used to reconstruct the secret"));
        assert_eq!(combine(&[two[0].clone(), two[0].clone()]), Err("duplicate part detected"));
    }
}
